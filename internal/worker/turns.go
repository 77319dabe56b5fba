package worker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/realdir"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Exact sessions (docs/live-sessions.md, "Session workers"): an
// any-session worker resumes the session a task names; every turn
// delivered into a session records its request token before the CLI
// starts, so a turn interrupted by a restart is recovered from the
// session's transcript, never sent again.

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

// recoverTurn settles a task whose session turn a previous relay process
// left running (it crashed or was killed): the answer the session's
// transcript holds after the turn's request is reported, labelled as
// recovered; the CLI's own error there blocks the task with its cause
// (decide); without either the task is blocked as not re-sent. handled is
// false when the task's claim recorded no turn (a fresh run, or a turn
// that had not started its CLI): the caller puts it back in the queue.
func (m *Manager) recoverTurn(ctx context.Context, t relay.Task) (handled bool, err error) {
	rs, ok, err := m.opts.Relay.RunSession(ctx, t.ID)
	if err != nil || !ok || rs.RequestToken == "" || rs.ClaimedAt != t.ClaimedAt || m.opts.Sessions == nil {
		return false, err
	}
	label := rs.SessionID
	if name, _, err := m.opts.Sessions.Find(rs.Harness, rs.SessionID); err == nil {
		label = sessionLabel(sessionInfo{ID: rs.SessionID, Label: name})
	}
	text, rerr := m.opts.Sessions.Recover(rs.Harness, rs.SessionID, rs.RequestToken, claimTime(rs.ClaimedAt))
	var moved interface{ MovedOn() bool }
	var out outcome
	logged := logInterrupted // not re-sent, unless the transcript tells more
	step := relay.ActivityEntry{Kind: relay.StepEnd, Status: relay.StepFailed}
	switch {
	case cliFailure(rerr) != "":
		// The turn ended in the CLI's own error: a failure, as in a fresh
		// run, never an answer.
		out, logged = decide(decideInput{name: m.opts.Harness.Name(rs.Harness), failure: cliFailure(rerr)}), logBlocked
		step.Text = fmt.Sprintf("The relay restarted during this turn; the transcript of the session %s shows the CLI's own error after this request, so the task is blocked and was not sent again.", label)
	case errors.As(rerr, &moved) && moved.MovedOn():
		// A later prompt follows the request: what follows may be another
		// turn's answer, never reported as this one's.
		out = movedOnOutcome(label)
		step.Text = "Stopped: " + out.message
	case strings.TrimSpace(text) != "":
		out, logged = decide(decideInput{name: m.opts.Harness.Name(rs.Harness), answer: text}), logBlocked
		if out.kind == relay.ReportCompleted {
			logged = logRecovered
			out = recoveredOutcome(out, whyRestart)
			if !strings.Contains(text, rs.RequestToken) {
				out.result += tokenNote(rs.RequestToken)
			}
		}
		step.Text, step.Status = fmt.Sprintf("The relay restarted during this turn; the answer was recovered from the transcript of the session %s (only what it wrote after this request), and the task was not sent again.", label), relay.StepOK
	default:
		out = notResentOutcome(label)
		step.Text = "Stopped: " + out.message
		if rerr != nil {
			out.message += fmt.Sprintf(" (Reading the transcript failed: %v.)", rerr)
		}
	}
	out.message = relay.RedactSecrets(out.message, m.opts.Secrets...)
	out.result = relay.RedactSecrets(out.result, m.opts.Secrets...)
	var errs []error
	if _, err := m.opts.Relay.AppendActivity(ctx, t.ID, []relay.ActivityEntry{step}); err != nil {
		errs = append(errs, fmt.Errorf("note the recovery in the run log: %w", err))
	}
	if _, err := m.opts.Relay.ReportTask(ctx, relay.ReportInput{ReporterSlug: t.RecipientSlug, TaskID: t.ID,
		Kind: out.kind, Message: out.message, Result: out.result}); err != nil {
		return true, errors.Join(append(errs, fmt.Errorf("report the interrupted turn of %s: %w", t.ID, err))...)
	}
	m.logRun(logged, t.RecipientSlug, t.ID, out.message)
	rs.RequestToken, rs.ClaimedAt = "", ""
	if err := m.opts.Relay.SaveRunSession(ctx, rs); err != nil {
		errs = append(errs, fmt.Errorf("clear the turn's request token: %w", err))
	}
	return true, errors.Join(errs...)
}
