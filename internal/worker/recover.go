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
// crashed or was killed mid-run), per run folder in RunRoot (README,
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
