//go:build unix

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// sessionName is the name a person gives the session the workers are bound to.
const sessionName = "harbour chat"

// TestSessionWorkers binds workers to a session the real Claude Code and
// Codex CLIs made in a person's own run, against the fake model's session
// script, and shows: (d) a name two sessions share is refused with both
// candidates when the worker is saved; (a) a task is delivered into the
// session by resuming it, and the model's request carries the session's
// first turn; (b) a second task for the same session, through a second
// worker, waits for the turn lock while the first turn runs and then runs,
// its requests all after the first turn's; (c) a CLI killed mid-turn has its
// answer recovered from the session's transcript and labelled.
func TestSessionWorkers(t *testing.T) {
	sessionCLIs(t, "", sessionWorkers)
}

// sessionCLIs runs body for each CLI whose sessions a worker can resume
// (Claude Code, Codex), each in a folder of its own (its name and suffix).
func sessionCLIs(t *testing.T, suffix string, body func(t *testing.T, tc cliCase, program, base string)) {
	bin := cliFolder(t, "claude and codex")
	root := newRoot(t)
	for _, tc := range cases() {
		if tc.harness != relay.SessionClaudeCode && tc.harness != relay.SessionCodex {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			program := filepath.Join(bin, tc.name)
			if _, err := os.Stat(program); err != nil {
				t.Fatalf("%s: %v (run npm ci in .ci/clis)", tc.name, err)
			}
			body(t, tc, program, filepath.Join(root, tc.name+suffix))
		})
	}
}

// personsSessions is a person's own two sessions in a project folder,
// made by the real CLI against the fake model's session script and both
// named sessionName.
type personsSessions struct {
	home, work, marker string
	fm                 *e2e.FakeModel
	names              []string // the CLI's environment variables
	store              session.Store
	first, second      session.Session
}

func makePersonsSessions(t *testing.T, tc cliCase, program, base, prefix string) personsSessions {
	start := time.Now()
	p := personsSessions{home: filepath.Join(base, "home"), work: filepath.Join(base, "work"),
		marker: fmt.Sprintf("%s-%s-%d", prefix, tc.name, time.Now().UnixNano()%1e6)}
	p.fm, p.names = cliEnvironment(t, tc, p.home, p.work, e2e.Script{Marker: p.marker, Session: true})
	p.store = session.Store{Home: p.home}
	p.first = seedSession(t, tc, program, p.work, p.store, p.marker)
	p.second = seedSession(t, tc, program, p.work, p.store, p.marker)
	nameSession(t, p.home, p.first, sessionName)
	nameSession(t, p.home, p.second, sessionName)
	t.Logf("sessions %s and %s made in %s", p.first.ID, p.second.ID, time.Since(start).Round(time.Millisecond))
	return p
}

func sessionWorkers(t *testing.T, tc cliCase, program, base string) {
	start := time.Now()
	p := makePersonsSessions(t, tc, program, base, "sess")
	home, work, marker, fm, names, first, second := p.home, p.work, p.marker, p.fm, p.names, p.first, p.second

	r := startRelay(t, filepath.Join(base, "data"))
	for _, slug := range []string{"builder", "builder-two"} {
		if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: tc.name, Capabilities: []string{"file-system"}}); err != nil {
			t.Fatalf("create agent %s: %v", slug, err)
		}
	}
	bind := func(slug, ref string) (relay.WorkerStatus, error) {
		return r.Services.Workers.Save(relay.WorkerConfig{
			AgentSlug: slug, Harness: tc.harness, Command: program, Workdir: work, Session: ref,
			AllowedSenders: []string{"operator"}, TimeoutMinutes: 5, Enabled: true, Exclusive: true, Env: names,
		})
	}

	// (d) The shared name is refused with both sessions as candidates.
	_, err := bind("builder", sessionName)
	var derr *relay.Error
	if !errors.As(err, &derr) || derr.Code != relay.EInvalidRequest || !strings.Contains(derr.Message, "2 sessions are named “"+sessionName+"”") ||
		!strings.Contains(derr.Message, first.ID) || !strings.Contains(derr.Message, second.ID) {
		t.Fatalf("binding the shared name: %v; want invalid_request naming both sessions", err)
	}
	if cands, _ := derr.Details["candidates"].([]app.SessionChoice); len(cands) != 2 {
		t.Errorf("candidates in the details: %+v", derr.Details)
	}
	nameSession(t, home, second, "side chat")
	for _, slug := range []string{"builder", "builder-two"} {
		st, err := bind(slug, sessionName)
		if err != nil || st.SessionID != first.ID {
			t.Fatalf("bind %s to %q: %+v %v; want session %s", slug, sessionName, st.WorkerConfig, err, first.ID)
		}
	}
	dataDir := r.Config().DataDir
	post := func(to, title, instructions string) relay.Task {
		t.Helper()
		task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: to, Title: title, Instructions: instructions})
		if err != nil {
			t.Fatalf("post task: %v", err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				logFailure(t, r, task.ID, nil)
			}
		})
		return task
	}
	t.Cleanup(func() {
		if t.Failed() {
			s := fm.Seen()
			t.Logf("fake model: requests %v\nsession requests %q\nturns %+v\nheld %q\nproblems %v\nlast tools %v", s.Requests, s.SessionRequests, s.SessionTurns, s.Held, s.Problems, s.ToolsOffered)
		}
	})
	tokens := map[string]bool{}

	// (a) A task is delivered into the session: the model sees its first turn.
	mid := time.Now()
	a := post("builder", "Name the harbour master", "Who is the harbour master? Answer from our conversation.")
	d := waitDone(t, r, a.ID, 1, dataDir, tokens)
	res := d.Task.Reports[len(d.Task.Reports)-1].Result
	turns := fm.Seen().SessionTurns
	if d.Task.Status != relay.StatusCompleted || !strings.Contains(res, e2e.SessionAnswer+marker) || len(turns) != 1 || !strings.Contains(res, turns[0].Token) {
		t.Fatalf("(a) task %s, result %q, turns %+v; want the session answer with its request token", d.Task.Status, res, turns)
	}
	if !turns[0].History {
		t.Errorf("(a) the delivered turn's request lacks the session's first turn (%s)", e2e.SeedAnswer+marker)
	}
	if strings.Contains(res, worker.RecoveredLabel) || strings.Contains(res, "does not carry") {
		t.Errorf("(a) result %q is labelled", res)
	}
	t.Logf("(a) delivered and answered in %s", time.Since(mid).Round(time.Millisecond))

	// (b) Two tasks for the session at once, through two workers: the second
	// waits for the turn lock while the first turn is held mid-way, then runs.
	mid = time.Now()
	b1 := post("builder", "Check the tide table", "Check the tide table. "+e2e.HoldMarker)
	poll.Until(t, "the first turn to be held", runDeadline, func() bool { return len(fm.Seen().Held) == 1 })
	b2 := post("builder-two", "Check the buoys", "Check the buoys.")
	poll.Until(t, "the second task to wait for the session", runDeadline, func() bool {
		for _, e := range activity(t, r, b2.ID) {
			if strings.Contains(e.Text, "Waiting for the session") {
				return true
			}
		}
		return false
	})
	fm.Release()
	d1 := waitDone(t, r, b1.ID, 1, dataDir, tokens)
	d2 := waitDone(t, r, b2.ID, 1, dataDir, tokens)
	if d1.Task.Status != relay.StatusCompleted || d2.Task.Status != relay.StatusCompleted {
		t.Fatalf("(b) tasks %s and %s, want both completed", d1.Task.Status, d2.Task.Status)
	}
	seen := fm.Seen()
	tok1, tok2 := requestToken(t, seen, 1), requestToken(t, seen, 2)
	if !strings.Contains(d1.Task.Reports[len(d1.Task.Reports)-1].Result, e2e.HeldAnswer+marker) {
		t.Errorf("(b) first result %q, want the held answer", d1.Task.Reports[len(d1.Task.Reports)-1].Result)
	}
	secondStarts := slices.Index(seen.SessionRequests, tok2)
	for i, tok := range seen.SessionRequests {
		if tok == tok1 && i > secondStarts {
			t.Errorf("(b) request %d of the first turn came after the second turn began: %q", i, seen.SessionRequests)
		}
	}
	if tt := seen.SessionTurns[2]; !slices.Contains(tt.Before, tok1) || !tt.History {
		t.Errorf("(b) the second turn's request does not carry the first turn (%s): %+v", tok1, tt)
	}
	t.Logf("(b) request order %q, in %s", seen.SessionRequests, time.Since(mid).Round(time.Millisecond))

	// (c) The CLI is killed mid-turn: the answer comes from the transcript.
	mid = time.Now()
	c := post("builder", "Count the boats", "Count the boats. "+e2e.HoldMarker)
	poll.Until(t, "the third delivered turn to be held", runDeadline, func() bool { return len(fm.Seen().Held) == 2 })
	tok3 := fm.Seen().Held[1]
	// The answer's text is written (JSON-escaped) to the transcript while
	// the CLI waits for the model's held answer to its tool call.
	partial := e2e.PartialAnswer + marker + `\n` + tok3
	poll.Until(t, "the partial answer in the transcript", runDeadline, func() bool {
		b, _ := os.ReadFile(first.Path)
		return strings.Contains(string(b), partial)
	})
	pid := cliPID(t, filepath.Join(dataDir, "runs", c.ID+".process"))
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the CLI's process group %d: %v", pid, err)
	}
	dc := waitDone(t, r, c.ID, 1, dataDir, tokens)
	res = dc.Task.Reports[len(dc.Task.Reports)-1].Result
	if dc.Task.Status != relay.StatusCompleted || !strings.HasPrefix(res, worker.RecoveredLabel+": the CLI was killed before it printed its answer.]") ||
		!strings.Contains(res, e2e.PartialAnswer+marker) || !strings.Contains(res, tok3) {
		t.Fatalf("(c) task %s, result %q; want the partial answer recovered and labelled", dc.Task.Status, res)
	}
	for _, earlier := range []string{e2e.SeedAnswer, e2e.SessionAnswer, e2e.HeldAnswer} {
		if strings.Contains(res, earlier) {
			t.Errorf("(c) the recovered answer holds text from before the request (%s): %q", earlier, res)
		}
	}
	wantStep(t, activity(t, r, c.ID), "a warning that the answer was recovered", func(e relay.ActivityEntry) bool {
		return e.Kind == relay.StepWarning && strings.Contains(e.Text, "recovered from the transcript")
	})
	t.Logf("(c) killed and recovered in %s; %s in all", time.Since(mid).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// seedSession runs the CLI as a person would, outside the relay, and
// returns the session it made.
func seedSession(t *testing.T, tc cliCase, program, work string, store session.Store, marker string) session.Session {
	t.Helper()
	before, err := store.List(tc.harness)
	if err != nil {
		t.Fatal(err)
	}
	prompt := "SEED " + marker + ": remember that the harbour master is Ada."
	var cmd *exec.Cmd
	if tc.harness == relay.SessionClaudeCode {
		cmd = exec.Command(program, "-p", prompt, "--output-format", "stream-json", "--verbose")
	} else {
		cmd = exec.Command(program, "exec", "--json", "--skip-git-repo-check", prompt)
	}
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the person's own %s run: %v\n%s", tc.name, err, out)
	}
	after, err := store.List(tc.harness)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range after {
		if !slices.ContainsFunc(before, func(b session.Session) bool { return b.ID == s.ID }) {
			if filepath.Clean(s.Folder) != filepath.Clean(work) {
				t.Fatalf("the session ran in %q, want %q", s.Folder, work)
			}
			return s
		}
	}
	t.Fatalf("the %s run made no new session:\n%s", tc.name, out)
	return session.Session{}
}

// nameSession names a session as a person does (Claude Code's /rename, a
// Codex thread name).
func nameSession(t *testing.T, home string, s session.Session, name string) {
	t.Helper()
	path, line := s.Path, fmt.Sprintf(`{"type":"custom-title","customTitle":%q,"sessionId":%q}`, name, s.ID)
	if s.Tool == session.Codex {
		path, line = filepath.Join(session.Store{Home: home}.CodexHome(), "session_index.jsonl"), fmt.Sprintf(`{"id":%q,"thread_name":%q}`, s.ID, name)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.WriteString(line + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		t.Fatal(err)
	}
}

// requestToken is the token of the n-th delivered turn the model saw.
func requestToken(t *testing.T, s e2e.Seen, n int) string {
	t.Helper()
	if len(s.SessionTurns) <= n {
		t.Fatalf("the model saw %d delivered turns, want more than %d: %+v", len(s.SessionTurns), n, s.SessionTurns)
	}
	return s.SessionTurns[n].Token
}

// cliPID reads the CLI's pid from a run's process file.
func cliPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	poll.Until(t, "the run's process file", runDeadline, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err = strconv.Atoi(strings.TrimSpace(first))
		return err == nil && pid > 0
	})
	return pid
}

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
