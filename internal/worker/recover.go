package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Recover cleans up after runs a previous relay process left behind (it
// crashed or was killed mid-run), per run folder in RunRoot (docs/workers.md,
// "Workers: agents that run unattended"): the CLI recorded in its process
// file (beside the run folder, out of the run's reach) is stopped with its tree, but only if that pid still runs the same
// program (and, where known, started at the same time), so an unrelated
// process that reuses the pid is left alone; a task still claimed by a
// worker whose run delivered a turn into a session is settled from the
// session's transcript (settleClaim), never re-sent; any other goes back
// to the queue with a report telling the sender why; the
// run tokens are revoked and the folder is deleted. Start calls it before
// any loop runs.
func (m *Manager) Recover(ctx context.Context) error {
	entries, err := os.ReadDir(m.opts.RunRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run folder: %w", err)
	}
	var errs []error
	seen := map[string]bool{}
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() {
			// A process file whose run folder is gone.
			var ok bool
			if id, ok = strings.CutSuffix(id, processFileSuffix); !ok {
				_ = os.Remove(filepath.Join(m.opts.RunRoot, e.Name())) // a temporary process file
				continue
			}
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if err := m.recoverRun(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) recoverRun(ctx context.Context, taskID string) error {
	dir := filepath.Join(m.opts.RunRoot, taskID)
	var errs []error
	procFile := processFile(m.opts.RunRoot, taskID)
	if b, err := os.ReadFile(procFile); err == nil {
		pid, image, start := parseProcessFile(string(b))
		if pid > 0 && processMatches(pid, image) && (start == "" || processStart(pid) == start) {
			killLeftover(pid, m.opts.KillGrace)
		}
	}
	if _, err := relay.TaskID("taskId", taskID); err == nil {
		t, err := m.opts.Relay.Task(ctx, taskID)
		switch {
		case relay.ErrorCode(err) == relay.EUnknownTask:
		case err != nil:
			errs = append(errs, fmt.Errorf("read task %s: %w", taskID, err))
		case t.Status == relay.StatusClaimed && t.ClaimedVia == relay.ViaWorker:
			if err := m.settleClaim(ctx, t, restartReason); err != nil {
				errs = append(errs, err)
			}
		}
		if err := m.opts.Relay.RevokeRunTokens(ctx, taskID); err != nil {
			errs = append(errs, fmt.Errorf("revoke run tokens of %s: %w", taskID, err))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("remove run folder: %w", err))
	}
	if err := os.Remove(procFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove process file: %w", err))
	}
	return errors.Join(errs...)
}

// settleClaim ends a worker's claim on t that no run will end: a turn
// delivered into a session (bound or any-session) is settled from the
// session's transcript (recoverTurn), never re-sent; a claim whose turn
// record can't be read stays claimed, for the next start's recovery; any
// other run's task goes back to the queue with reason. Recover uses it at
// start, Stop for the runs that outlast its deadline.
func (m *Manager) settleClaim(ctx context.Context, t relay.Task, reason string) error {
	handled, err := m.recoverTurn(ctx, t)
	if handled || err != nil {
		return err
	}
	if _, err := m.opts.Relay.ReleaseTask(ctx, t.RecipientSlug, t.ID, reason); err != nil {
		return fmt.Errorf("requeue task %s: %w", t.ID, err)
	}
	m.logRun(logInterrupted, t.RecipientSlug, t.ID, reason)
	return nil
}

// parseProcessFile reads "<pid>\n<program base name>[\n<start time>]".
func parseProcessFile(s string) (pid int, image, start string) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) < 2 {
		return 0, "", ""
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return 0, "", ""
	}
	image = strings.TrimSpace(lines[1])
	if len(lines) > 2 {
		start = strings.TrimSpace(lines[2])
	}
	return pid, image, start
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
