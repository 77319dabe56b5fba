package store_test

import (
	"context"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// TestPostResolvesTargetSession: with a resolver set, a post's
// targetSession is resolved before the task is queued and the session's id
// is recorded; a refusal posts nothing; an unknown recipient is refused as
// before, without asking the resolver.
func TestPostResolvesTargetSession(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob")
	var asked []string
	e.db.SetSessionResolver(func(_ context.Context, recipient, ref string) (string, error) {
		asked = append(asked, recipient+"/"+ref)
		if ref == "release prep" {
			return "sess-1", nil
		}
		return "", relay.Errorf(relay.ESessionNotFound, "no session %q", ref)
	})
	post := func(to, ref string) (relay.Task, error) {
		return e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "ann", RecipientSlug: to, Title: "t", Instructions: "i",
			Priority: relay.PriorityNormal, TargetSession: ref})
	}
	for _, tc := range []struct {
		name, to, ref string
		code, target  string
	}{
		{name: "by name", to: "bob", ref: "release prep", target: "sess-1"},
		{name: "no such session", to: "bob", ref: "nothing", code: relay.ESessionNotFound},
		{name: "no target", to: "bob", ref: ""},
		{name: "unknown recipient", to: "nobody", ref: "release prep", code: relay.EUnknownAgent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := post(tc.to, tc.ref)
			if tc.code != "" {
				wantCode(t, err, tc.code)
				return
			}
			if err != nil || task.TargetSession != tc.target || e.task(task.ID).TargetSession != tc.target {
				t.Fatalf("post = %+v, %v; want target %q", task, err, tc.target)
			}
		})
	}
	if want := []string{"bob/release prep", "bob/nothing"}; len(asked) != 2 || asked[0] != want[0] || asked[1] != want[1] {
		t.Errorf("resolver asked %q, want %q", asked, want)
	}
}
