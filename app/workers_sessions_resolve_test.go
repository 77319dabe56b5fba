package app_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a post's targetSession is resolved against the sessions the
// recipient can be reached in, by the sources the app wires: an agent
// without a worker has none; an any-session worker (`workers set
// --sessions any`) offers its CLI's sessions that ran in its folders; a
// bound worker offers its session, so a name two sessions share resolves
// to the bound one; a live session (its channel told its name) is found too. The task keeps the session's id.
func TestPostResolvesTargetSession(t *testing.T) {
	_, work, _, program := threeSessions(t)
	const a, b = sessA, sessB
	r := startRelay(t)
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	if _, errs, code := run(t, append([]string{"agents", "add", "builder", "--name", "Builder", "--model", "claude", "--capability", "file-system"}, loc...)...); code != 0 {
		t.Fatalf("agents add: %s", errs)
	}
	post := func(ref string) (relay.Task, error) {
		return r.Service().PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "builder",
			Title: "t", Instructions: "i", Priority: relay.PriorityNormal, TargetSession: ref})
	}
	check := func(stage string, cases map[string]string) {
		t.Helper()
		for ref, want := range cases {
			task, err := post(ref)
			switch want {
			case relay.ESessionNotFound, relay.ESessionAmbiguous:
				if relay.ErrorCode(err) != want {
					t.Errorf("%s: post to %q = %+v, %v; want %s", stage, ref, task.TargetSession, err, want)
				}
			default:
				if err != nil || task.TargetSession != want {
					t.Errorf("%s: post to %q = %q, %v; want target %s", stage, ref, task.TargetSession, err, want)
				}
			}
		}
	}
	check("no worker", map[string]string{"release prep": relay.ESessionNotFound, a: relay.ESessionNotFound})

	// A live session its channel announced is a target by name or id.
	live := relay.LiveSession{AgentSlug: "builder", ID: "live-1", Name: "Main chat"}
	if err := r.Service().(relay.PushSource).SeeLiveSession(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	check("live", map[string]string{"Main chat": "live-1", "live-1": "live-1", "Main": relay.ESessionNotFound})

	set := func(args ...string) (string, string, int) {
		return run(t, append(append([]string{"workers", "set", "builder", "--harness", "claude-code", "--command", program, "--workdir", work}, args...), loc...)...)
	}
	if _, errs, code := set("--sessions", "some"); code == 0 || !strings.Contains(errs, "--sessions takes only any") {
		t.Fatalf("--sessions some: exit %d, %s", code, errs)
	}
	out, errs, code := set("--sessions", "any")
	if code != 0 || !strings.Contains(out, "A task that names a session is delivered into it") {
		t.Fatalf("--sessions any: exit %d, %s %s", code, out, errs)
	}
	if out, errs, code := run(t, append([]string{"workers", "list"}, loc...)...); code != 0 || !strings.Contains(out, "claude-code in any session") {
		t.Fatalf("workers list: exit %d, %s %s", code, out, errs)
	}
	check("any session", map[string]string{"release prep": relay.ESessionAmbiguous, a: a, "docs pass": relay.ESessionNotFound, "release": relay.ESessionNotFound})

	if _, errs, code := set("--session", b); code != 0 {
		t.Fatalf("bind to %s: %s", b, errs)
	}
	check("bound", map[string]string{"release prep": b, b: b, a: relay.ESessionNotFound})

	// A sender the worker does not take tasks from is told of none of its
	// sessions: not found, nothing similar, no folder.
	if _, errs, code := run(t, append([]string{"agents", "add", "stranger", "--name", "Stranger", "--model", "claude", "--capability", "file-system"}, loc...)...); code != 0 {
		t.Fatalf("agents add: %s", errs)
	}
	for _, stage := range [][]string{{"--session", b}, {"--sessions", "any"}} {
		if _, errs, code := set(stage...); code != 0 {
			t.Fatalf("workers set %v: %s", stage, errs)
		}
		for _, ref := range []string{"release prep", "release", b} {
			_, err := r.Service().PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "stranger", RecipientSlug: "builder",
				Title: "t", Instructions: "i", Priority: relay.PriorityNormal, TargetSession: ref})
			var e *relay.Error
			if !errors.As(err, &e) || e.Code != relay.ESessionNotFound {
				t.Fatalf("%v: stranger's post to %q = %v; want session_not_found", stage, ref, err)
			}
			if sim, _ := e.Details["similar"].([]string); len(sim) != 0 || strings.Contains(e.Message, work) {
				t.Errorf("%v: stranger's post to %q: similar %q, message %q; want nothing of the worker's sessions", stage, ref, sim, e.Message)
			}
		}
	}
}
