//go:build unix

package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// notLoggedIn is what Claude Code answers when it is not logged in.
const notLoggedIn = "Not logged in · Please run /login"

// TestSessionWorkersNotLoggedIn runs the real Claude Code not logged in
// (its workers are not given ANTHROPIC_API_KEY, which the person's own runs
// had) in the three ways a worker runs it: fresh, resuming the session it
// is bound to, and resuming the session a task names (any-session). Each
// task ends blocked with Claude Code's own words as the cause, never
// completed with them as a (recovered) answer, and the sender's journal
// says task-blocked, not task-completed.
func TestSessionWorkersNotLoggedIn(t *testing.T) {
	bin := cliFolder(t, "claude")
	root := newRoot(t)
	tc := cases()[0]
	program := filepath.Join(bin, tc.name)
	if _, err := os.Stat(program); err != nil {
		t.Fatalf("%s: %v (run npm ci in .ci/clis)", tc.name, err)
	}
	start := time.Now()
	p := makePersonsSessions(t, tc, program, filepath.Join(root, "nologin"), "nologin")
	nameSession(t, p.home, p.second, "side chat")
	// What the person's runs signed in with is not the workers'.
	env := slices.DeleteFunc(slices.Clone(p.names), func(n string) bool { return n == "ANTHROPIC_API_KEY" })

	dataDir := filepath.Join(root, "nologin", "data")
	r := startRelay(t, dataDir)
	workers := []struct {
		slug, session string
		any           bool
		target        string
	}{
		{slug: "fresh"},
		{slug: "bound", session: p.first.ID},
		{slug: "anysession", any: true, target: sessionName},
	}
	var ids []string
	for _, w := range workers {
		if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: w.slug, DisplayName: w.slug, ModelSlug: tc.name, Capabilities: []string{"file-system"}}); err != nil {
			t.Fatalf("create agent %s: %v", w.slug, err)
		}
		if _, err := r.Services.Workers.Save(relay.WorkerConfig{
			AgentSlug: w.slug, Harness: tc.harness, Command: program, Workdir: p.work, Session: w.session, AnySession: w.any,
			AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: env,
		}); err != nil {
			t.Fatalf("save the %s worker: %v", w.slug, err)
		}
		task, err := r.Service().PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: w.slug,
			Title: "Name the harbour master", Instructions: "Who is the harbour master?", Priority: relay.PriorityNormal, TargetSession: w.target})
		if err != nil {
			t.Fatalf("post to %s: %v", w.slug, err)
		}
		ids = append(ids, task.ID)
		t.Cleanup(func() {
			if t.Failed() {
				logFailure(t, r, task.ID, nil)
			}
		})
	}
	tokens := map[string]bool{}
	for i, w := range workers {
		d := waitDone(t, r, ids[i], 1, dataDir, tokens)
		rep := d.Task.Reports[len(d.Task.Reports)-1]
		want := "Claude Code failed without answering this task: " + notLoggedIn
		if d.Task.Status != relay.StatusBlocked || !strings.HasPrefix(rep.Message, want) {
			t.Errorf("%s: task %s with %q / %q; want blocked with %q", w.slug, d.Task.Status, rep.Message, rep.Result, want)
		}
		if strings.Contains(rep.Message+rep.Result, "Recovered") || strings.Contains(rep.Result, worker.RecoveredLabel) {
			t.Errorf("%s: the CLI's error was taken for a recovered answer: %q / %q", w.slug, rep.Message, rep.Result)
		}
		if !strings.Contains(rep.Message, "ANTHROPIC_API_KEY") {
			t.Errorf("%s: the blocker %q does not say the worker was not given ANTHROPIC_API_KEY", w.slug, rep.Message)
		}
		if w.session != "" || w.any {
			if rs, ok, err := r.Service().RunSession(context.Background(), ids[i]); err != nil || !ok || rs.SessionID != p.first.ID {
				t.Errorf("%s: the run resumed %+v (%v %v), want the session %s", w.slug, rs, ok, err, p.first.ID)
			}
		}
	}
	journal, err := r.Service().ListEvents(context.Background(), relay.EventFilter{Agent: "operator", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range journal {
		if slices.Contains(ids, e.TaskID) && (e.Type == relay.EventTaskBlocked || e.Type == relay.EventTaskCompleted) {
			kinds[e.TaskID] = e.Type
		}
	}
	for i, w := range workers {
		if kinds[ids[i]] != relay.EventTaskBlocked {
			t.Errorf("%s: the sender was told %q, want %s", w.slug, kinds[ids[i]], relay.EventTaskBlocked)
		}
	}
	t.Logf("three not-logged-in runs blocked in %s", time.Since(start).Round(time.Millisecond))
}
