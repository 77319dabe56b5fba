//go:build unix

package e2e_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/e2e"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// TestExactSessions drives an any-session worker with the real Claude Code
// and Codex CLIs against the fake model's session script, on sessions a
// person's own runs of the CLI made, and shows: (r) a post naming a
// session is resolved at once: a shared name is refused with both
// candidates (session_ambiguous), a near miss with the name as a
// suggestion (session_not_found); (a) a task naming a session by its exact
// name is delivered into it by the any-session worker, which resumes it
// (the model sees the session's first turn), and the task keeps the
// session's id; (m) a relay restart mid-turn recovers the answer from the
// transcript, labelled as interrupted by a restart, and the turn is not
// sent again; (b) a restart before any answer blocks the task as
// "interrupted; not re-sent", still not re-sent after the restart, and the
// operator's requeue delivers it again.
func TestExactSessions(t *testing.T) {
	sessionCLIs(t, "-exact", exactSessions)
}

func exactSessions(t *testing.T, tc cliCase, program, base string) {
	start := time.Now()
	p := makePersonsSessions(t, tc, program, base, "exact")
	home, work, marker, fm, names, store, first, second := p.home, p.work, p.marker, p.fm, p.names, p.store, p.first, p.second
	t.Cleanup(func() {
		if t.Failed() {
			s := fm.Seen()
			t.Logf("fake model: requests %v\nsession requests %q\nturns %+v\nheld %q\nproblems %v", s.Requests, s.SessionRequests, s.SessionTurns, s.Held, s.Problems)
		}
	})

	dataDir := filepath.Join(base, "data")
	r, stop := restartableRelay(t, dataDir)
	if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "builder", DisplayName: "builder", ModelSlug: tc.name, Capabilities: []string{"file-system"}}); err != nil {
		t.Fatalf("create agent: %v", err)
	}
	if _, err := r.Services.Workers.Save(relay.WorkerConfig{
		AgentSlug: "builder", Harness: tc.harness, Command: program, Workdir: work, AnySession: true,
		AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: names,
	}); err != nil {
		t.Fatalf("save the any-session worker: %v", err)
	}
	post := func(r *app.Relay, target, title, instructions string) (relay.Task, error) {
		return r.Service().PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "operator", RecipientSlug: "builder",
			Title: title, Instructions: instructions, Priority: relay.PriorityNormal, TargetSession: target})
	}
	mustPost := func(r *app.Relay, target, title, instructions string) relay.Task {
		t.Helper()
		task, err := post(r, target, title, instructions)
		if err != nil {
			t.Fatalf("post to %q: %v", target, err)
		}
		if task.TargetSession != first.ID {
			t.Fatalf("the task keeps targetSession %q, want the session's id %s", task.TargetSession, first.ID)
		}
		return task
	}
	tokens := map[string]bool{}

	// (r) Resolution at post time, against the sessions the CLI wrote.
	_, err := post(r, sessionName, "Shared", "x")
	var rerr *relay.Error
	if !errors.As(err, &rerr) || rerr.Code != relay.ESessionAmbiguous || !strings.Contains(rerr.Message, first.ID) || !strings.Contains(rerr.Message, second.ID) {
		t.Fatalf("(r) post to the shared name: %v; want session_ambiguous naming both sessions", err)
	}
	if cands, _ := rerr.Details["candidates"].([]session.Candidate); len(cands) != 2 {
		t.Errorf("(r) candidates in the details: %+v", rerr.Details)
	}
	_, err = post(r, sessionName+"s", "Near miss", "x")
	if !errors.As(err, &rerr) || rerr.Code != relay.ESessionNotFound || !slices.Contains(rerr.Details["similar"].([]string), sessionName) {
		t.Fatalf("(r) post to a near miss: %v; want session_not_found suggesting %q", err, sessionName)
	}
	nameSession(t, home, second, "side chat")

	// (a) The any-session worker resumes the session the task names.
	a := mustPost(r, sessionName, "Name the harbour master", "Who is the harbour master? Answer from our conversation.")
	d := waitDone(t, r, a.ID, 1, dataDir, tokens)
	res := d.Task.Reports[len(d.Task.Reports)-1].Result
	turns := fm.Seen().SessionTurns
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(res, e2e.SessionAnswer+marker) || len(turns) != 1 || !strings.Contains(res, turns[0].Token) || !turns[0].History {
		t.Fatalf("(a) task %s, result %q, turns %+v; want the session's answer to a turn that carried its first turn", d.Task.Status, res, turns)
	}
	t.Logf("(a) resumed by name and answered in %s", time.Since(start).Round(time.Millisecond))

	// (m) A restart mid-turn: the answer comes from the transcript, once.
	mid := time.Now()
	m := mustPost(r, first.ID, "Count the boats", "Count the boats. "+e2e.HoldMarker)
	poll.Until(t, "the turn to be held mid-way", runDeadline, func() bool { return len(fm.Seen().Held) == 1 })
	tokM := fm.Seen().Held[0]
	poll.Until(t, "the partial answer in the transcript", runDeadline, func() bool {
		return transcriptHas(t, store, tc.harness, first.ID, e2e.PartialAnswer+marker)
	})
	r = stop(r)
	dm := waitDone(t, r, m.ID, 1, dataDir, tokens)
	res = dm.Task.Reports[len(dm.Task.Reports)-1].Result
	if dm.Task.Status != relay.StatusCompleted || !strings.HasPrefix(res, worker.RecoveredLabel+": the run was interrupted by a restart") ||
		!strings.Contains(res, e2e.PartialAnswer+marker) || strings.Contains(res, e2e.HeldAnswer) {
		t.Fatalf("(m) task %s, result %q; want the partial answer recovered and labelled as interrupted by a restart", dm.Task.Status, res)
	}
	if n := turnsWith(fm.Seen(), tokM); n != 1 {
		t.Errorf("(m) the turn %s was delivered %d times, want once", tokM, n)
	}
	t.Logf("(m) restarted mid-turn and recovered in %s", time.Since(mid).Round(time.Millisecond))

	// (b) A restart before any answer: blocked, not re-sent; a requeue sends it.
	mid = time.Now()
	b := mustPost(r, sessionName, "Check the buoys", "Check the buoys. "+e2e.HoldFirstMarker)
	poll.Until(t, "the turn to be held before any answer", runDeadline, func() bool { return len(fm.Seen().Held) == 2 })
	tokB := fm.Seen().Held[1]
	r = stop(r)
	t.Logf("(b) restarted after %s", time.Since(mid).Round(time.Millisecond))
	db := waitDone(t, r, b.ID, 1, dataDir, tokens)
	msg := db.Task.Reports[len(db.Task.Reports)-1].Message
	if db.Task.Status != relay.StatusBlocked || !strings.HasPrefix(msg, worker.InterruptedNotResent) {
		t.Fatalf("(b) task %s, message %q; want blocked as %q", db.Task.Status, msg, worker.InterruptedNotResent)
	}
	if n := turnsWith(fm.Seen(), tokB); n != 1 {
		t.Errorf("(b) the turn %s was delivered %d times, want once", tokB, n)
	}
	if _, err := r.Services.Tasks.Requeue(b.ID, "Send it again."); err != nil {
		t.Fatalf("(b) requeue: %v", err)
	}
	poll.Until(t, "the requeued turn to be delivered", runDeadline, func() bool { return len(fm.Seen().Held) == 3 })
	t.Logf("(b) the requeued turn reached the model after %s", time.Since(mid).Round(time.Millisecond))
	fm.Release()
	db = waitDone(t, r, b.ID, 2, dataDir, tokens)
	if res := db.Task.Reports[len(db.Task.Reports)-1].Result; db.Task.Status != relay.StatusCompleted || !strings.Contains(res, e2e.SessionAnswer+marker) {
		t.Fatalf("(b) after the requeue: task %s, result %q", db.Task.Status, res)
	}
	t.Logf("(b) blocked as not re-sent and requeued in %s; %s in all", time.Since(mid).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// restartableRelay starts a relay on dataDir; stop shuts the one it is
// given down and starts another on the same folder (a restart). The last
// one stops when the test ends.
func restartableRelay(t *testing.T, dataDir string) (*app.Relay, func(*app.Relay) *app.Relay) {
	t.Helper()
	var current *app.Relay
	begin := func() *app.Relay {
		r, err := app.Start(apptest.Config(dataDir), app.StartOptions{Version: "e2e"})
		if err != nil {
			t.Fatalf("start relay: %v", err)
		}
		current = r
		return r
	}
	t.Cleanup(func() {
		if current != nil {
			apptest.Stop(t, current)
		}
	})
	stop := func(r *app.Relay) *app.Relay {
		t.Helper()
		current = nil
		apptest.Stop(t, r)
		return begin()
	}
	return begin(), stop
}

// transcriptHas reports whether a session's transcript (every rollout of a
// Codex thread) holds text, JSON-escaped as the CLIs write it.
func transcriptHas(t *testing.T, st session.Store, tool, id, text string) bool {
	t.Helper()
	s, err := st.ByID(tool, id)
	if err != nil {
		return false
	}
	for _, p := range append([]string{s.Path}, s.Paths...) {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), text) {
			return true
		}
	}
	return false
}

// turnsWith counts the delivered turns the model saw with token.
func turnsWith(s e2e.Seen, token string) int {
	n := 0
	for _, tt := range s.SessionTurns {
		if tt.Token == token {
			n++
		}
	}
	return n
}
