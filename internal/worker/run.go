package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Output limits.
const (
	maxCapture  = 2 << 20 // bytes of each stream kept for the answer
	tailBytes   = 16 << 10
	maxLine     = 8 << 20
	tailRunes   = 1500
	maxMsgRunes = 39000
	firstLine   = 300
	summaryLen  = 200
	waitDelay   = 3 * time.Second
	maxReported = 5000 // files the CLI says it wrote, kept per run
	// maxStream is how much of each output stream the run view and the
	// stream parser see; the rest is read and dropped, with a marker step.
	maxStream = 16 << 20
	// maxResultFile is how much of a result file is read.
	maxResultFile = maxCapture
)

// Reasons given to the sender when a run's task goes back to the queue.
const (
	restartReason  = "The relay restarted while its worker was running this task, so it will run again."
	shutdownReason = "The relay stopped while its worker was running this task, so it will run again."
	reloadReason   = "The worker was reconfigured or stopped as it claimed this task, so it went back to the queue."
	pauseReason    = "Workers were paused as this worker claimed this task, so it went back to the queue."
)

// runState is one run of one task.
type runState struct {
	w      *worker
	cfg    relay.WorkerConfig
	task   relay.Task
	name   string
	token  string
	runID  string
	runDir string
	// server is the run's name for its own MCP server (runspec.Request's
	// Server), drawn with the run.
	server string
	rec    *recorder
	// turn is the delivery into the worker's bound session, nil for a fresh run.
	turn *sessionTurn
	// image is the base name of the CLI's program (the process file's),
	// which the sandbox starts through our own binary.
	image string
	// sandboxed: the run's CLI is confined to its folders.
	sandboxed bool
	// workdir is the working folder as it resolves, checked (folders):
	// the CLI starts in it.
	workdir string
	// allowed maps each allowed path, as configured, to where it led when
	// folders checked it: the sandbox and the plant guard take those, and
	// resolve none again.
	allowed map[string]string

	mu       sync.Mutex          // guards reported (the stdout goroutine adds)
	reported []relay.ChangedFile // files the CLI says it wrote
}

// run runs one claimed task to the end (docs/workers.md, "Workers: agents that run
// unattended") and always leaves the worker not running, with lastRun set.
// The error is for the loop's log.
func (w *worker) run(ctx context.Context, cfg relay.WorkerConfig, task relay.Task) error {
	o := w.m.opts
	startedAt := o.Now()
	w.update(func(w *worker) {
		w.current = &relay.RunningTask{ID: task.ID, Title: task.Title, StartedAt: relay.FormatTime(startedAt)}
		w.starts = append(w.starts, startedAt)
	})
	r := &runState{
		w: w, cfg: cfg, task: task,
		name:   o.Harness.Name(cfg.Harness),
		runID:  newRunID(),
		server: newServerName(),
		runDir: filepath.Join(o.RunRoot, task.ID),
	}
	res := r.execute(ctx)
	errs := res.errs
	bg := context.WithoutCancel(ctx)

	// Send the outcome only while the task is still this run's claim: the
	// CLI may have reported or released it itself, or the sender cancelled.
	var sent string
	final, err := o.Relay.Task(bg, task.ID)
	if err != nil {
		errs = append(errs, fmt.Errorf("read task: %w", err))
	}
	if err == nil && final.Status == relay.StatusClaimed && final.RecipientSlug == cfg.AgentSlug &&
		final.ClaimedVia == relay.ViaWorker && final.ClaimedAt == task.ClaimedAt {
		var t relay.Task
		if res.stopped || res.requeue != "" {
			reason := shutdownReason
			if res.requeue != "" {
				reason = res.requeue
			}
			t, err = o.Relay.ReleaseTask(bg, cfg.AgentSlug, task.ID, reason)
		} else {
			sent = res.out.message
			t, err = o.Relay.ReportTask(bg, relay.ReportInput{
				ReporterSlug: cfg.AgentSlug, TaskID: task.ID, Kind: res.out.kind,
				Message: res.out.message, Result: res.out.result,
			})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("report task: %w", err))
		} else {
			final = t
		}
	}

	last := &relay.LastRun{TaskID: task.ID, Title: task.Title, FinishedAt: relay.FormatTime(o.Now()), Refused: res.refused, Undone: res.undone}
	switch {
	case res.cancelled || final.Status == relay.StatusCancelled:
		last.Outcome = "cancelled"
		last.Summary = "Stopped: the task was cancelled."
	case res.stopped:
		last.Outcome = "cancelled"
		last.Summary = shutdownReason
	case res.requeue != "":
		last.Outcome = "cancelled"
		last.Summary = res.requeue
	case final.Status == relay.StatusCompleted:
		last.Outcome = relay.ReportCompleted
	default:
		last.Outcome = relay.ReportBlocked
	}
	if last.Summary == "" {
		if n := len(final.Reports); n > 0 {
			sent = final.Reports[n-1].Message
		}
		last.Summary = clipRunes(strings.Join(strings.Fields(sent), " "), summaryLen)
	}
	w.update(func(w *worker) {
		w.current = nil
		w.last = last
	})
	w.m.logRun(runLogOutcome(res, final.Status), cfg.AgentSlug, task.ID, last.Summary)
	if len(errs) > 0 {
		return fmt.Errorf("task %s: %w", task.ID, errors.Join(errs...))
	}
	return nil
}

// runResult is how a run ended.
type runResult struct {
	out       outcome
	cancelled bool // the task was cancelled while it ran
	stopped   bool // the manager stopped
	// requeue, when set, gives the task back to the queue with this reason.
	requeue string
	// refused are the paths the sandbox refused a blocked run.
	refused []string
	// undone are the run's changes to git configuration, hooks and agent
	// settings that were undone (see planted.go).
	undone []string
	// recovered: the answer came from the session's transcript.
	recovered bool
	errs      []error
}

// execute does the run up to the report: token, folder, spawn, wait,
// activity, files, clean-up.
func (r *runState) execute(ctx context.Context) (res runResult) {
	o := r.w.m.opts
	bg := context.WithoutCancel(ctx)
	slug := r.cfg.AgentSlug
	fail := func(err error) outcome {
		return outcome{kind: relay.ReportBlocked,
			message: fmt.Sprintf("The %s worker couldn't run this task: %s", r.name, errorText(err))}
	}

	ttl := r.cfg.TimeoutMinutes*60 + 600
	token, err := o.Relay.IssueRunToken(ctx, slug, r.task.ID, ttl)
	if err != nil {
		res.errs = append(res.errs, fmt.Errorf("issue run token: %w", err))
		res.out = fail(errors.New("no run token could be issued"))
		res.stopped = ctx.Err() != nil
		return res
	}
	r.token = token
	secrets := append([]string{token}, o.Secrets...)
	r.rec = newRecorder(o.Relay, r.task.ID, r.runID, o.Now, o.FlushEvery, secrets...)
	defer func() {
		if err := o.Relay.RevokeRunTokens(bg, r.task.ID); err != nil {
			res.errs = append(res.errs, fmt.Errorf("revoke run tokens: %w", err))
		}
		if err := os.RemoveAll(r.runDir); err != nil {
			res.errs = append(res.errs, fmt.Errorf("remove run folder: %w", err))
		}
		if err := os.Remove(processFile(o.RunRoot, r.task.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			res.errs = append(res.errs, fmt.Errorf("remove process file: %w", err))
		}
	}()

	r.rec.add(relay.ActivityEntry{Kind: relay.StepStart, Text: fmt.Sprintf("%s started in %s", r.name, r.cfg.Workdir)})
	workdir, extra, err := r.folders()
	if err != nil {
		res.out = fail(err)
		r.endRun(&res)
		return res
	}
	r.workdir = workdir
	kept, err := r.guardFolders(workdir, extra)
	if err != nil {
		res.out = fail(err)
		r.endRun(&res)
		return res
	}
	defer r.w.m.guarded.release(kept) // undoPlanted releases them, unless the run ends before
	if r.cfg.AnySession && r.task.TargetSession != "" {
		if err := r.pickSession(); err != nil {
			res.out = fail(err)
			r.endRun(&res)
			return res
		}
	}
	if r.cfg.SessionID != "" {
		turn, end, err := r.takeSession(ctx)
		switch end {
		case waitTaken:
			r.turn = turn
			defer func() {
				if err := turn.release(o.Sessions); err != nil {
					res.errs = append(res.errs, err)
				}
			}()
		case waitFailed:
			res.out = fail(err)
		case waitCancelled:
			res.cancelled = true
		case waitStopped:
			res.stopped = true
		case waitBusy:
			res.requeue = fmt.Sprintf("The session this worker delivers into stayed busy with another turn for %s, so the task went back to the queue.",
				plural(r.cfg.TimeoutMinutes, "minute"))
		}
		if end != waitTaken {
			r.endRun(&res)
			return res
		}
		if err := r.recordTurn(bg, r.turn.token); err != nil {
			res.errs = append(res.errs, err)
			res.out = fail(err)
			r.endRun(&res)
			return res
		}
	}
	dirs := append([]string{workdir}, extra...)
	var endTracking func(context.Context, []relay.ChangedFile) []relay.ChangedFile
	if o.Tracker != nil {
		endTracking = o.Tracker.Begin(ctx, dirs)
	}

	ex := r.spawnAndWait(ctx, extra)
	res.cancelled, res.stopped = ex.cancelled, ex.stopped
	res.errs = append(res.errs, ex.errs...)
	// The run's whole process tree has ended: undo what it planted.
	planted, undone, errs := r.undoPlanted(kept)
	res.undone = undone
	res.errs = append(res.errs, errs...)

	// Files the run made.
	var files []relay.ChangedFile
	if endTracking != nil {
		r.mu.Lock()
		reported := slices.Clone(r.reported)
		r.mu.Unlock()
		files = endTracking(bg, reported)
	}
	if len(files) > 0 {
		r.rec.add(relay.ActivityEntry{Kind: relay.StepFiles, Status: relay.StepOK, Text: filesText(files), Files: files})
	}

	switch {
	case ex.setupErr != nil:
		res.out = fail(ex.setupErr)
		if hint := AuthHint(r.cfg.Harness, ex.withheld); hint != "" {
			res.out.message += "\n\n" + hint
		}
	default:
		res.out = decide(decideInput{
			name: r.name, timeoutMinutes: r.cfg.TimeoutMinutes, timedOut: ex.timedOut,
			exitCode: ex.exitCode, answer: ex.answer, failure: ex.failure, stdout: ex.stdoutTail, stderr: ex.stderrTail,
			authHint: AuthHint(r.cfg.Harness, ex.withheld), cut: ex.cut,
		})
	}
	if r.sandboxed && res.out.kind == relay.ReportBlocked {
		res.refused = refusedPaths(ex.stderrTail+"\n"+ex.stdoutTail, maxRefused)
		if hint := sandboxHint(ex.stdoutTail, ex.stderrTail); hint != "" {
			res.out.message += "\n\n" + hint
			r.rec.add(relay.ActivityEntry{Kind: relay.StepWarning, Text: hint})
		}
	}
	if r.turn != nil {
		res.out = r.turn.label(res.out, ex)
		res.recovered = ex.recovered && res.out.kind == relay.ReportCompleted
	}
	if planted != "" {
		res.out.message += "\n\n" + planted
	}
	res.out.message = relay.RedactSecrets(res.out.message, secrets...)
	res.out.result = relay.RedactSecrets(res.out.result, secrets...)
	r.endRun(&res)
	if ex.sessionID != "" || r.turn != nil { // a turn's request token is cleared
		if ex.sessionID == "" {
			ex.sessionID = r.turn.info.ID
		}
		if err := o.Relay.SaveRunSession(bg, relay.RunSession{
			TaskID: r.task.ID, Harness: r.cfg.Harness, SessionID: ex.sessionID, Workdir: r.cfg.Workdir,
		}); err != nil {
			res.errs = append(res.errs, fmt.Errorf("save run session: %w", err))
		}
	}
	return res
}

// endRun records the run's end step and writes the activity out.
func (r *runState) endRun(res *runResult) {
	end := relay.ActivityEntry{Kind: relay.StepEnd, Status: relay.StepFailed}
	switch {
	case res.cancelled:
		end.Text = "Stopped: the task was cancelled."
	case res.stopped:
		end.Text = "Stopped: the relay is shutting down; the task goes back to the queue."
	case res.requeue != "":
		end.Text = "Stopped: " + res.requeue
	case res.out.kind == relay.ReportCompleted:
		end.Text, end.Status = "Finished. The result was sent to the sender.", relay.StepOK
	default:
		end.Text = "Stopped: " + firstNonBlank(res.out.message)
	}
	r.rec.add(end)
	if err := r.rec.close(); err != nil {
		res.errs = append(res.errs, err)
	}
}
