package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Session workers (README, "Session workers"): a worker bound to an
// existing Claude Code session or Codex thread delivers each task into it
// by resuming it. One turn at a time per session: the worker takes the
// session's turn lock first and waits for it (renewing the lease) while
// another turn holds it. The prompt carries a request token the answer
// should echo; when the CLI dies before answering, the answer is recovered
// from the session's transcript (text written after the request only) and
// labelled as recovered.

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
	// after the request that carries token ("" when there is none).
	Recover(harness, id, token string) (string, error)
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
	// session's transcript.
	RecoveredLabel = "[Recovered from the session's transcript: the CLI ended before it printed its answer.]"
)

// sessionTurn is one delivery of a task into a bound session.
type sessionTurn struct {
	info  sessionInfo
	token string // the request token, also the turn lock's owner token
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
// missing (the CLI died, timed out or printed nothing) is recovered from
// the session's transcript; an answer without the request token is noted.
func (r *runState) finishTurn(turn *sessionTurn, ex *execResult) {
	o := r.w.m.opts
	label := sessionLabel(turn.info)
	if ex.cancelled || ex.stopped || ex.setupErr != nil {
		return
	}
	if ex.timedOut || ex.exitCode != 0 || strings.TrimSpace(ex.answer) == "" {
		text, err := o.Sessions.Recover(r.cfg.Harness, turn.info.ID, turn.token)
		switch {
		case err != nil:
			ex.errs = append(ex.errs, fmt.Errorf("recover the answer from the session %s: %w", turn.info.ID, err))
		case strings.TrimSpace(text) != "":
			ex.recovered = true
			ex.answer = strings.TrimSpace(text)
			ex.exitCode, ex.timedOut, ex.cut = 0, false, ""
			r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepOK,
				Text: fmt.Sprintf("The CLI ended before it printed its answer; the answer was recovered from the transcript of the session %s (only what it wrote after this request).", label)})
		}
	}
	if a := strings.TrimSpace(ex.answer); a != "" && !strings.Contains(a, turn.token) {
		ex.tokenMissing = turn.token
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepFailed,
			Text: fmt.Sprintf("The answer does not carry this request's token (%s), so it may not answer this task.", turn.token)})
	}
	if ex.sessionID != "" && ex.sessionID != turn.info.ID {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepFailed,
			Text: fmt.Sprintf("The CLI went on in another session (%s) instead of %s.", ex.sessionID, label)})
	}
}

// labelOutcome marks a session run's report: recovered answers and answers
// without the request token say so in the result.
func labelOutcome(out outcome, ex execResult) outcome {
	if out.kind != relay.ReportCompleted {
		return out
	}
	if ex.recovered {
		out.result = RecoveredLabel + "\n\n" + out.result
		out.message = clipRunes("Recovered: "+out.message, firstLine)
	}
	if ex.tokenMissing != "" {
		out.result += fmt.Sprintf("\n\n[The answer does not carry the request token %s, so it may not answer this task.]", ex.tokenMissing)
	}
	return out
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
