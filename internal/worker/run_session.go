package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Session workers (docs/live-sessions.md, "session workers"): a worker bound to an
// existing Claude Code session or Codex thread delivers each task into it
// by resuming it. One turn at a time per session: the worker takes the
// session's turn lock first and waits for it (renewing the lease) while
// another turn holds it. The prompt carries a request token the answer
// should echo; when the CLI dies before answering, the answer is recovered
// from the session's transcript (text written after the request only) and
// labelled as recovered.
//
// Exact sessions (docs/live-sessions.md, "Session workers"): an
// any-session worker resumes the session a task names (pickSession); every
// turn delivered into a session records its request token before the CLI
// starts (recordTurn), so a turn interrupted by a restart is recovered from
// the session's transcript (Manager.recoverTurn), never sent again.

// Sessions is what a session worker needs of the agent CLIs' own session
// stores on this computer (internal/session's Turns implements it).
type Sessions interface {
	// Find returns the label (the name a person gave it, else its generated
	// title) and last activity of the harness's (claude-code, codex)
	// session with id.
	Find(harness, id string) (label string, lastActive time.Time, err error)
	// TryLock takes the session's turn lock for token without waiting. When
	// another owner holds it, ok is false and holder describes the owner.
	TryLock(id, token string) (ok bool, holder string, err error)
	// Unlock releases the turn lock held with token.
	Unlock(id, token string) error
	// Recover returns the assistant text the session's transcript holds
	// after the request that carries token ("" when there is none),
	// ignoring records stamped before since (the turn's claim). A turn
	// that ended in the CLI's own error gives an error with a Failure()
	// string method (the cause); one the session moved on from, an error
	// with a MovedOn() bool method.
	Recover(harness, id, token string, since time.Time) (string, error)
	// Locate finds the harness's session that ref names (an id, or an exact
	// name among the newest sessions) for an any-session worker, among the
	// sessions that ran in roots (checked on resolved paths, no symbolic
	// link), and returns its id and the resolved folder it ran in. Its
	// errors name no folder.
	Locate(harness, ref string, roots []string) (id, folder string, err error)
}

// sessionInfo is what the worker read of a bound session.
type sessionInfo struct {
	ID         string
	Label      string
	LastActive time.Time
}

// Session worker constants.
const (
	// IdleWarning is how long a session may sit unused before a run that
	// resumes it shows a warning.
	IdleWarning = 24 * time.Hour
	// lockPoll is how often a waiting run re-tries a held turn lock (a lock
	// file held by another process gives no wake-up to wait on).
	lockPoll = 200 * time.Millisecond
	// requestTokenPrefix starts a request token.
	requestTokenPrefix = "crosschat-req-"
	// RecoveredLabel starts the result of an answer recovered from the
	// session's transcript; the label goes on with why recovery was needed
	// ("…: the CLI exited with code 1 before it printed its answer.]").
	RecoveredLabel = "[Recovered from the session's transcript"
	// InterruptedNotResent starts the blocker of a turn interrupted before
	// its session's transcript held an answer: it is never sent again by
	// itself; the operator can requeue it.
	InterruptedNotResent = "Interrupted; not re-sent"
	// whyRestart is why a turn interrupted by a restart needed recovery.
	whyRestart = "the run was interrupted by a restart of the relay or its worker before the CLI printed its answer"
)

// sessionTurn is one delivery of a task into a bound session.
type sessionTurn struct {
	info  sessionInfo
	token string // the request token, also the turn lock's owner token
	// why says why the answer had to be recovered ("" when it was not).
	why string
	// notResent: the run was interrupted and the transcript held no answer.
	notResent bool
}

// newRequestToken returns a fresh request token.
func newRequestToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return requestTokenPrefix + hex.EncodeToString(b[:])
}

// waitEnd says how waiting for a session's turn ended without the turn.
type waitEnd int

const (
	waitTaken     waitEnd = iota // the lock is held
	waitFailed                   // the session can't be used (see the error)
	waitCancelled                // the sender cancelled the task
	waitStopped                  // the manager is stopping
	waitBusy                     // the session stayed busy past the time limit
)

// takeSession finds the bound session, warns when it has been idle for
// more than IdleWarning, and takes its turn lock, waiting while another
// owner holds it: the lease is renewed and cancellation watched meanwhile.
// It never fails on a held lock: past the run's time limit the task goes
// back to the queue (waitBusy).
func (r *runState) takeSession(ctx context.Context) (*sessionTurn, waitEnd, error) {
	o := r.w.m.opts
	if o.Sessions == nil {
		return nil, waitFailed, errors.New("this relay cannot reach the agent CLIs' sessions")
	}
	info := sessionInfo{ID: r.cfg.SessionID}
	var err error
	if info.Label, info.LastActive, err = o.Sessions.Find(r.cfg.Harness, r.cfg.SessionID); err != nil {
		return nil, waitFailed, fmt.Errorf("the session %s is not on this computer any more (%w); bind the worker to another session", r.cfg.SessionID, err)
	}
	label := sessionLabel(info)
	if idle := o.Now().Sub(info.LastActive); !info.LastActive.IsZero() && idle > IdleWarning {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepFailed,
			Text: fmt.Sprintf("The session %s was last active %s ago (%s). This task resumes it anyway: check that it is still the conversation you meant.",
				label, idleText(idle), info.LastActive.UTC().Format("2006-01-02 15:04 UTC"))})
	}
	turn := &sessionTurn{info: info, token: newRequestToken()}
	bg := context.WithoutCancel(ctx)
	deadline := o.Now().Add(time.Duration(r.cfg.TimeoutMinutes) * o.MinuteLength)
	changes, unsubscribe := o.Relay.Subscribe(64)
	defer unsubscribe()
	poll := time.NewTicker(lockPoll)
	defer poll.Stop()
	renew := time.NewTicker(o.RenewEvery)
	defer renew.Stop()
	check := time.NewTicker(o.CancelCheckEvery)
	defer check.Stop()
	const waitRef = "session-wait"
	waited := false
	for {
		ok, holder, err := o.Sessions.TryLock(info.ID, turn.token)
		if err != nil {
			return nil, waitFailed, fmt.Errorf("take the turn lock of the session %s: %w", label, err)
		}
		if ok {
			if waited {
				r.rec.add(relay.ActivityEntry{Kind: relay.StepStart, Status: relay.StepOK, Ref: waitRef,
					Text: fmt.Sprintf("The session %s is free: delivering the task.", label)})
			}
			return turn, waitTaken, nil
		}
		if !waited {
			waited = true
			if holder == "" {
				holder = "another owner"
			}
			r.rec.add(relay.ActivityEntry{Kind: relay.StepStart, Status: relay.StepRunning, Ref: waitRef,
				Text: fmt.Sprintf("Waiting for the session %s: another turn is running in it (%s). This task goes next.", label, holder)})
		}
		if o.Now().After(deadline) {
			return nil, waitBusy, nil
		}
		select {
		case <-ctx.Done():
			return nil, waitStopped, nil
		case <-poll.C:
		case <-renew.C:
			if r.renewLease(bg) {
				return nil, waitCancelled, nil
			}
		case <-check.C:
			if r.cancelledNow(bg) {
				return nil, waitCancelled, nil
			}
		case c, ok := <-changes:
			if !ok {
				changes = nil
				continue
			}
			if r.cancelledBy(c) {
				return nil, waitCancelled, nil
			}
		}
	}
}

// finishTurn checks a session run's answer after the CLI ended: an answer
// missing (the CLI died, timed out or printed nothing, or the relay or its
// worker stopped mid-turn) is recovered from the session's transcript,
// unless the CLI's stream already said it failed, or the transcript says
// so (the turn is then the CLI's failure, as in a fresh run: decide); a
// stopped turn without either is not re-sent; an answer without the
// request token is noted.
func (r *runState) finishTurn(turn *sessionTurn, ex *execResult) {
	o := r.w.m.opts
	label := sessionLabel(turn.info)
	if ex.cancelled || ex.setupErr != nil {
		return
	}
	if why := recoverWhy(ex, r.cfg.TimeoutMinutes); why != "" {
		text, err := o.Sessions.Recover(r.cfg.Harness, turn.info.ID, turn.token, claimTime(r.task.ClaimedAt))
		switch {
		case cliFailure(err) != "":
			ex.failure = cliFailure(err)
			r.rec.add(relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: fmt.Sprintf("The transcript of the session %s shows the CLI's own error after this request, not an answer: %s", label, clipRunes(ex.failure, firstLine))})
		case err != nil:
			ex.errs = append(ex.errs, fmt.Errorf("recover the answer from the session %s: %w", turn.info.ID, err))
		case strings.TrimSpace(text) != "":
			ex.recovered, turn.why = true, why
			ex.answer = strings.TrimSpace(text)
			ex.exitCode, ex.timedOut, ex.cut = 0, false, ""
			r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepOK,
				Text: fmt.Sprintf("The answer was recovered from the transcript of the session %s (only what it wrote after this request): %s.", label, why)})
		}
		if ex.stopped {
			// Never a resend: the turn reports what the transcript holds (an
			// answer or the CLI's failure), or is blocked for the operator
			// to requeue.
			ex.stopped, turn.notResent = false, !ex.recovered && ex.failure == ""
		}
	}
	if a := strings.TrimSpace(ex.answer); a != "" && ex.failure == "" && !strings.Contains(a, turn.token) {
		ex.tokenMissing = turn.token
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepFailed,
			Text: fmt.Sprintf("The answer does not carry this request's token (%s), so it may not answer this task.", turn.token)})
	}
	if ex.sessionID != "" && ex.sessionID != turn.info.ID {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepFailed,
			Text: fmt.Sprintf("The CLI went on in another session (%s) instead of %s.", ex.sessionID, label)})
	}
}

// recoverWhy says why a turn's answer must come from the transcript, ""
// when the CLI printed one or said it failed.
func recoverWhy(ex *execResult, timeoutMinutes int) string {
	switch {
	case ex.failure != "":
		return ""
	case ex.stopped:
		return whyRestart
	case ex.timedOut:
		return fmt.Sprintf("the CLI timed out after %s before it printed its answer", plural(timeoutMinutes, "minute"))
	case ex.exitCode == -1:
		return "the CLI was killed before it printed its answer"
	case ex.exitCode != 0:
		return fmt.Sprintf("the CLI exited with code %d before it printed its answer", ex.exitCode)
	case strings.TrimSpace(ex.answer) == "":
		return "the CLI ended without printing an answer"
	}
	return ""
}

// label marks a session run's report: a recovered answer says why it was
// recovered, an answer without the request token says so, and a turn
// interrupted before any answer is blocked as not re-sent.
func (t *sessionTurn) label(out outcome, ex execResult) outcome {
	if t.notResent {
		return notResentOutcome(sessionLabel(t.info))
	}
	if out.kind != relay.ReportCompleted {
		return out
	}
	if ex.recovered {
		out = recoveredOutcome(out, t.why)
	}
	if ex.tokenMissing != "" {
		out.result += tokenNote(ex.tokenMissing)
	}
	return out
}

// cliFailure is the cause an error from Sessions.Recover gives for a turn
// that ended in the CLI's own error, "" for any other error.
func cliFailure(err error) string {
	var f interface{ Failure() string }
	if errors.As(err, &f) {
		return f.Failure()
	}
	return ""
}

// tokenNote is the result's note on an answer without its request token.
func tokenNote(token string) string {
	return fmt.Sprintf("\n\n[The answer does not carry the request token %s, so it may not answer this task.]", token)
}

// recoveredOutcome labels a completed outcome as recovered, saying why.
func recoveredOutcome(out outcome, why string) outcome {
	out.result = RecoveredLabel + ": " + why + ".]\n\n" + out.result
	out.message = clipRunes("Recovered: "+out.message, firstLine)
	return out
}

// claimTime is a task's claim time; zero when it is unreadable (nothing is
// then ignored for its time).
func claimTime(claimedAt string) time.Time {
	t, err := relay.ParseTime(claimedAt)
	if err != nil {
		return time.Time{}
	}
	return t
}

// notResentOutcome blocks a turn interrupted before its session's
// transcript held an answer.
func notResentOutcome(session string) outcome {
	return notResent(session, "before the session's transcript held an answer to this request")
}

// movedOnOutcome blocks a turn interrupted in a session that went on
// after the request (a later prompt follows it in the transcript): what
// follows may not be this request's answer, so none is reported.
func movedOnOutcome(session string) outcome {
	return notResent(session, "and the session moved on (a later prompt follows this request in its transcript), so no answer is taken from it")
}

// notResent blocks an interrupted turn, saying why no answer was taken.
func notResent(session, why string) outcome {
	return outcome{kind: relay.ReportBlocked, message: fmt.Sprintf(
		"%s: the run in the session %s was interrupted (the relay or its worker stopped, or its process was killed) %s. "+
			"It was not sent again, so the work is never done twice; requeue the task to deliver it again.", InterruptedNotResent, session, why)}
}

// release gives the session's turn lock back.
func (t *sessionTurn) release(s Sessions) error {
	if err := s.Unlock(t.info.ID, t.token); err != nil {
		return fmt.Errorf("release the turn lock of session %s: %w", t.info.ID, err)
	}
	return nil
}

// sessionLabel is “name” (id), or the id alone.
func sessionLabel(s sessionInfo) string {
	if s.Label == "" {
		return s.ID
	}
	return "“" + s.Label + "” (" + s.ID + ")"
}

// idleText is a duration in days or hours.
func idleText(d time.Duration) string {
	if days := int(d / (24 * time.Hour)); days >= 2 {
		return fmt.Sprintf("%d days", days)
	}
	return fmt.Sprintf("%d hours", int(d/time.Hour))
}

// targetSessions are the target sessions a worker's tasks may name besides
// none: a session worker's session id, the name or id it was bound by and
// the session's label. A worker without a session takes every task (nil).
func targetSessions(cfg relay.WorkerConfig) []string {
	if cfg.SessionID == "" {
		return nil
	}
	out := []string{cfg.SessionID}
	for _, s := range []string{cfg.Session, cfg.SessionLabel} {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// pickSession makes an any-session worker's run deliver its task into the
// session the task names: the session's id, and its folder as the run's
// working folder, which must be the worker's working folder, one of its
// extra folders or a path its sandbox may write, or inside one.
func (r *runState) pickSession() error {
	o := r.w.m.opts
	if o.Sessions == nil {
		return errors.New("this relay cannot reach the agent CLIs' sessions")
	}
	// Only sessions that ran in the worker's folders are looked at; the
	// folder is checked on resolved paths (a symbolic link inside a root
	// leads nowhere) and the error names no folder: it reaches the sender.
	roots := r.cfg.SessionFolders()
	id, folder, err := o.Sessions.Locate(r.cfg.Harness, r.task.TargetSession, roots)
	if err != nil {
		return fmt.Errorf("the session “%s” can't be resumed: %s", r.task.TargetSession, errorText(err))
	}
	if folder, err = realdir.Within(folder, roots); err != nil {
		return fmt.Errorf("the session “%s” can't be resumed: %w", r.task.TargetSession, err)
	}
	if filepath.Clean(folder) != filepath.Clean(r.cfg.Workdir) {
		// The CLI resumes a session from the folder it ran in; the worker's
		// own folder stays allowed.
		r.cfg.ExtraDirs = append([]string{r.cfg.Workdir}, r.cfg.ExtraDirs...)
		r.cfg.Workdir = folder
	}
	r.cfg.SessionID, r.cfg.SessionLabel = id, ""
	return nil
}

// recordTurn remembers the turn's session and request token with the run,
// stamped with this claim, before the CLI starts.
func (r *runState) recordTurn(ctx context.Context, token string) error {
	if err := r.w.m.opts.Relay.SaveRunSession(ctx, relay.RunSession{
		TaskID: r.task.ID, Harness: r.cfg.Harness, SessionID: r.turn.info.ID, Workdir: r.cfg.Workdir,
		RequestToken: token, ClaimedAt: r.task.ClaimedAt,
	}); err != nil {
		return fmt.Errorf("record the turn's request token: %w", err)
	}
	return nil
}
