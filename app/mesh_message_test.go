package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A task from another relay reaches the recipient's push stream with its
// signature mark, and monitor --format message shows it as verification;
// a local task's line says "authenticated" (its sender known by its token).
func TestMessageLineVerificationAcrossRelays(t *testing.T) {
	a, b := startTrustedPair(t)
	alice, err := a.Services.Agents.Create(relay.CreateAgentInput{Slug: "alice", DisplayName: "Alice", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	bob, err := b.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	carol, err := b.Services.Agents.Create(relay.CreateAgentInput{Slug: "carol", DisplayName: "Carol", ModelSlug: "m", Capabilities: []string{"text-output"}})
	noErr(t, err)
	sa, sb := newSession(t, a, alice.Token), newSession(t, b, bob.Token)
	sb.call("heartbeat", map[string]any{}, nil)

	// Bob's push stream, open before anything is posted.
	events := make(chan relay.PushEvent, 4)
	connected := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ps := &client.PushStream{BaseURL: b.Config().BaseURL(), Token: bob.Token, After: -1,
		OnEvent: func(e relay.PushEvent) error { events <- e; return nil },
		OnReady: func(int64) {
			select {
			case connected <- struct{}{}:
			default:
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- ps.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-connected:
	case err := <-done:
		t.Fatalf("push stream: %v", errors.Join(err, errors.New("ended before it connected")))
	case <-time.After(30 * time.Second):
		t.Fatal("bob's push stream did not connect")
	}

	waitListed(t, sa, "bob", "relay-b")
	var remote relay.Task
	sa.call("post_task", map[string]any{"recipientSlug": "bob", "title": "Across", "instructions": "Do it on B."}, &remote)
	next := func() relay.PushEvent {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no push event for bob within 30 s")
			return relay.PushEvent{}
		}
	}
	e := next()
	if line := cli.MessageLine(e); e.TaskID != remote.ID || !strings.Contains(line, `"kind":"task","verification":"verified",`) {
		t.Fatalf("the remote task's line: %s", line)
	}
	var local relay.Task
	newSession(t, b, carol.Token).call("post_task", map[string]any{"recipientSlug": "bob", "title": "Here", "instructions": "Do it."}, &local)
	if e := next(); e.TaskID != local.ID || !strings.Contains(cli.MessageLine(e), `"verification":"authenticated",`) {
		t.Fatalf("the local task's line: %s", cli.MessageLine(e))
	}
}
