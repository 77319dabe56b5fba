package worker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// execResult is what spawning and waiting gave.
type execResult struct {
	setupErr  error
	timedOut  bool
	cancelled bool
	stopped   bool
	exitCode  int
	answer    string
	// failure is the CLI's own error in place of an answer: its stream's
	// (runspec.StreamParser.Failure) or, for a recovered turn, its
	// session's transcript's.
	failure    string
	stdoutTail string
	stderrTail string
	sessionID  string
	withheld   []string
	errs       []error
	// cut says what part of the answer the worker left out (a marker for
	// the result), or "".
	cut string
	// recovered: the answer came from the session's transcript.
	recovered bool
	// tokenMissing is the request token a session answer did not carry.
	tokenMissing string
}

// spawnAndWait starts the CLI and waits for it, renewing the lease,
// watching for cancellation and enforcing the time limit.
func (r *runState) spawnAndWait(ctx context.Context, extra []string) (ex execResult) {
	o := r.w.m.opts
	cmd, spec, parser, withheld, err := r.prepareRun(ctx, extra)
	if r.turn != nil {
		defer r.finishTurn(r.turn, &ex)
	}
	ex.withheld = withheld
	if err != nil {
		ex.setupErr = err
		ex.stopped = ctx.Err() != nil
		return ex
	}
	for _, n := range spec.Notes {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Status: relay.StepOK, Text: n})
	}
	plain := spec.Events == "" || spec.Events == runspec.EventsPlain
	stdout := newCapture(func(line string) {
		entries := parser.Line(line)
		r.noteFiles(entries)
		r.rec.add(entries...)
	})
	stderr := newCapture(func(line string) {
		if plain && strings.TrimSpace(line) != "" {
			r.rec.add(relay.ActivityEntry{Kind: relay.StepOutput, Text: line})
		}
	})
	for _, c := range []struct {
		c    *capture
		name string
	}{{stdout, "output"}, {stderr, "error output"}} {
		c.c.onCut = func() {
			r.rec.add(relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: fmt.Sprintf("The %s passed %d MiB; the worker reads the rest but does not show or keep it.", c.name, maxStream>>20)})
		}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr

	// Subscribe before starting, so a cancellation is never missed.
	changes, unsubscribe := o.Relay.Subscribe(256)
	defer unsubscribe()
	if err := inheritStdioOnly(); err != nil {
		ex.setupErr = err
		return ex
	}
	if err := cmd.Start(); err != nil {
		ex.setupErr = fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
		return ex
	}
	tr, err := attach(cmd)
	if err != nil {
		// Windows without a job object: taskkill /T still reaches the tree.
		ex.errs = append(ex.errs, fmt.Errorf("track the process tree: %w", err))
	}
	if err := r.writeProcessFile(cmd); err != nil {
		ex.errs = append(ex.errs, err)
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	s := &supervisor{r: r, bg: context.WithoutCancel(ctx), tree: tr, ex: &ex}
	waitErr := s.wait(ctx, done, changes)
	// Whatever the CLI left running in its group goes too.
	tr.kill(o.KillGrace)
	tr.release()
	stdout.flush()
	stderr.flush()
	r.readResult(&ex, cmd, waitErr, spec, parser, plain, stdout, stderr)
	return ex
}

// supervisor watches one started CLI until it exits: one method per event
// of its wait loop. Every event that ends the run kills the process tree
// and records why in ex.
type supervisor struct {
	r      *runState
	bg     context.Context // the run's context without its cancellation
	tree   tree
	ex     *execResult
	killed chan struct{} // nil until a kill starts; closed when it ends
}

// wait runs the loop until the CLI exits (done) and returns its Wait error,
// after any kill it started has finished.
func (s *supervisor) wait(ctx context.Context, done <-chan error, changes <-chan relay.Change) error {
	o := s.r.w.m.opts
	timeout := time.NewTimer(time.Duration(s.r.cfg.TimeoutMinutes) * o.MinuteLength)
	defer timeout.Stop()
	renew := time.NewTicker(o.RenewEvery)
	defer renew.Stop()
	check := time.NewTicker(o.CancelCheckEvery)
	defer check.Stop()
	beat := time.NewTicker(heartbeatEvery)
	defer beat.Stop()

	stop := ctx.Done()
	for {
		select {
		case err := <-done:
			if s.killed != nil {
				<-s.killed
			}
			return err
		case <-stop:
			stop = nil
			s.onStop()
		case <-timeout.C:
			s.onTimeout()
		case <-renew.C:
			s.onRenew()
		case <-check.C:
			s.onCancelCheck()
		case <-beat.C:
			s.onHeartbeat()
		case c, ok := <-changes:
			if !ok {
				changes = nil // dropped for falling behind: the timer still checks
				continue
			}
			s.onChange(c)
		}
	}
}

// onStop: the manager is stopping; the task goes back to the queue.
func (s *supervisor) onStop() {
	s.ex.stopped = true
	s.kill()
}

// onTimeout: the run's time limit passed.
func (s *supervisor) onTimeout() {
	s.ex.timedOut = true
	s.kill()
}

// onRenew renews the lease; a failed renewal of a cancelled task ends the run.
func (s *supervisor) onRenew() {
	if s.r.renewLease(s.bg) {
		s.onCancelled()
	}
}

// onCancelCheck reads the task, besides the change stream, for a cancellation.
func (s *supervisor) onCancelCheck() {
	if s.r.cancelledNow(s.bg) {
		s.onCancelled()
	}
}

// onHeartbeat keeps the agent present while it works.
func (s *supervisor) onHeartbeat() {
	_, _ = s.r.w.m.opts.Relay.Heartbeat(s.bg, s.r.cfg.AgentSlug) // presence only
}

// onChange ends the run when the change cancels its task.
func (s *supervisor) onChange(c relay.Change) {
	if s.r.cancelledBy(c) {
		s.onCancelled()
	}
}

// onCancelled: the sender cancelled the task.
func (s *supervisor) onCancelled() {
	s.ex.cancelled = true
	s.kill()
}

// renewLease renews the run's lease on its task and reports whether a
// failed renewal found the task cancelled.
func (r *runState) renewLease(bg context.Context) (cancelled bool) {
	_, err := r.w.m.opts.Relay.RenewLease(bg, r.cfg.AgentSlug, r.task.ID, LeaseSeconds)
	return err != nil && r.cancelledNow(bg)
}

// cancelledNow reports whether the run's task is cancelled in the store.
func (r *runState) cancelledNow(bg context.Context) bool {
	t, err := r.w.m.opts.Relay.Task(bg, r.task.ID)
	return err == nil && t.Status == relay.StatusCancelled
}

// cancelledBy reports whether change c cancels the run's task.
func (r *runState) cancelledBy(c relay.Change) bool {
	return c.Type == relay.ChangeTask && c.Task != nil && c.Task.ID == r.task.ID && c.Task.Status == relay.StatusCancelled
}

// kill stops the process tree once, in the background, so the loop keeps
// reading the CLI's exit.
func (s *supervisor) kill() {
	if s.killed != nil {
		return
	}
	killed := make(chan struct{})
	s.killed = killed
	tr, grace := s.tree, s.r.w.m.opts.KillGrace
	go func() {
		defer close(killed)
		tr.kill(grace)
	}()
}
