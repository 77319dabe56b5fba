package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Run folder files.
const (
	promptFileName  = "task.md"
	resultFileName  = "result.md"
	mcpFileName     = "mcp.json"
	processFileName = "process"
	// RunServerName is the MCP server name of the relay's tools in mcp.json.
	RunServerName = "crosschat-run"
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
)

// Reasons given to the sender when a run's task goes back to the queue.
const (
	restartReason  = "The relay restarted while its worker was running this task, so it will run again."
	shutdownReason = "The relay stopped while its worker was running this task, so it will run again."
)

// errAbandoned ends a run that a test abandoned, as a crash would.
var errAbandoned = errors.New("worker: abandoned")

// runState is one run of one task.
type runState struct {
	w      *worker
	cfg    relay.WorkerConfig
	task   relay.Task
	name   string
	token  string
	runID  string
	runDir string
	rec    *recorder

	mu       sync.Mutex          // guards reported (the stdout goroutine adds)
	reported []relay.ChangedFile // files the CLI says it wrote
}

// run runs one claimed task to the end (§6.5) and always leaves the worker
// not running, with lastRun set. The error is for the loop's log.
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
		runDir: filepath.Join(o.RunRoot, task.ID),
	}
	res := r.execute(ctx)
	if res.abandoned {
		return errAbandoned
	}
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
		if res.stopped {
			t, err = o.Relay.ReleaseTask(bg, cfg.AgentSlug, task.ID, shutdownReason)
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

	last := &relay.LastRun{TaskID: task.ID, Title: task.Title, FinishedAt: relay.FormatTime(o.Now())}
	switch {
	case res.cancelled || final.Status == relay.StatusCancelled:
		last.Outcome = "cancelled"
		last.Summary = "Stopped: the task was cancelled."
	case res.stopped:
		last.Outcome = "cancelled"
		last.Summary = shutdownReason
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
	var remove bool
	w.update(func(w *worker) {
		w.current = nil
		w.last = last
		remove = w.deleted
	})
	if remove {
		w.m.mu.Lock()
		if w.m.workers[cfg.AgentSlug] == w {
			delete(w.m.workers, cfg.AgentSlug)
		}
		w.m.mu.Unlock()
	}
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
	abandoned bool // a test simulated a crash
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
	r.rec = newRecorder(o.Relay, r.task.ID, r.runID, o.Now, o.FlushEvery, token)
	defer func() {
		if res.abandoned {
			return
		}
		if err := o.Relay.RevokeRunTokens(bg, r.task.ID); err != nil {
			res.errs = append(res.errs, fmt.Errorf("revoke run tokens: %w", err))
		}
		if err := os.RemoveAll(r.runDir); err != nil {
			res.errs = append(res.errs, fmt.Errorf("remove run folder: %w", err))
		}
	}()

	r.rec.add(relay.ActivityEntry{Kind: relay.StepStart, Text: fmt.Sprintf("%s started in %s", r.name, r.cfg.Workdir)})
	var extra []string
	for _, d := range r.cfg.ExtraDirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			extra = append(extra, d)
			continue
		}
		r.rec.add(relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
			Text: fmt.Sprintf("The extra folder %s does not exist, so this run can't use it.", d)})
	}
	dirs := append([]string{r.cfg.Workdir}, extra...)
	var endTracking func(context.Context, []relay.ChangedFile) []relay.ChangedFile
	if o.Tracker != nil {
		end, err := o.Tracker.Begin(ctx, dirs)
		if err != nil {
			r.rec.add(relay.ActivityEntry{Kind: relay.StepError, Status: relay.StepFailed,
				Text: "The worker can't list the files this run changes: " + err.Error()})
		}
		endTracking = end
	}

	ex := r.spawnAndWait(ctx, extra)
	if ex.abandoned {
		// Leave the CLI and its folder as a crash would; only stop our goroutines.
		res.abandoned = true
		if endTracking != nil {
			endTracking(bg, nil) // stops the watcher
		}
		_ = r.rec.close()
		return res
	}
	res.cancelled, res.stopped = ex.cancelled, ex.stopped
	res.errs = append(res.errs, ex.errs...)

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
			exitCode: ex.exitCode, answer: ex.answer, stdout: ex.stdoutTail, stderr: ex.stderrTail,
			authHint: AuthHint(r.cfg.Harness, ex.withheld),
		})
	}
	res.out.message = relay.RedactSecrets(res.out.message, token)
	res.out.result = relay.RedactSecrets(res.out.result, token)

	end := relay.ActivityEntry{Kind: relay.StepEnd, Status: relay.StepFailed}
	switch {
	case res.cancelled:
		end.Text = "Stopped: the task was cancelled."
	case res.stopped:
		end.Text = "Stopped: the relay is shutting down; the task goes back to the queue."
	case res.out.kind == relay.ReportCompleted:
		end.Text, end.Status = "Finished. The result was sent to the sender.", relay.StepOK
	default:
		end.Text = "Stopped: " + firstNonBlank(res.out.message)
	}
	r.rec.add(end)
	if err := r.rec.close(); err != nil {
		res.errs = append(res.errs, err)
	}
	if ex.sessionID != "" {
		if err := o.Relay.SaveRunSession(bg, relay.RunSession{
			TaskID: r.task.ID, Harness: r.cfg.Harness, SessionID: ex.sessionID, Workdir: r.cfg.Workdir,
		}); err != nil {
			res.errs = append(res.errs, fmt.Errorf("save run session: %w", err))
		}
	}
	return res
}

// execResult is what spawning and waiting gave.
type execResult struct {
	setupErr   error
	timedOut   bool
	cancelled  bool
	stopped    bool
	abandoned  bool
	exitCode   int
	answer     string
	stdoutTail string
	stderrTail string
	sessionID  string
	withheld   []string
	errs       []error
}

// prepareRun writes the run folder and builds the command.
func (r *runState) prepareRun(ctx context.Context, extra []string) (*exec.Cmd, relay.RunSpec, relay.StreamParser, []string, error) {
	o := r.w.m.opts
	if err := os.MkdirAll(o.RunRoot, 0o700); err != nil {
		return nil, relay.RunSpec{}, nil, nil, fmt.Errorf("create the run folder: %w", err)
	}
	if err := os.RemoveAll(r.runDir); err != nil {
		return nil, relay.RunSpec{}, nil, nil, fmt.Errorf("clear the run folder: %w", err)
	}
	if err := os.Mkdir(r.runDir, 0o700); err != nil {
		return nil, relay.RunSpec{}, nil, nil, fmt.Errorf("create the run folder: %w", err)
	}
	req := relay.RunRequest{
		Config:        r.cfg,
		RunDir:        r.runDir,
		PromptFile:    filepath.Join(r.runDir, promptFileName),
		ResultFile:    filepath.Join(r.runDir, resultFileName),
		MCPConfigFile: filepath.Join(r.runDir, mcpFileName),
		MCPURL:        o.MCPURL,
		ExtraDirs:     extra,
	}
	in, resume := r.promptInput(ctx, extra)
	req.ResumeSession = resume
	// First without the prompt, to learn whether the run gets the relay's tools.
	spec, err := o.Harness.Build(req)
	if err != nil {
		return nil, spec, nil, nil, err
	}
	in.RelayServer = spec.RelayServer
	req.Prompt = o.Harness.Prompt(in)
	if spec, err = o.Harness.Build(req); err != nil {
		return nil, spec, nil, nil, err
	}
	mcp, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{RunServerName: map[string]any{
		"type": "http", "url": o.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + r.token},
	}}}, "", "  ")
	if err != nil {
		return nil, spec, nil, nil, fmt.Errorf("write %s: %w", mcpFileName, err)
	}
	files := map[string]string{promptFileName: req.Prompt, mcpFileName: string(mcp)}
	for name, content := range spec.Files {
		if !filepath.IsLocal(name) {
			return nil, spec, nil, nil, fmt.Errorf("the harness asked for a file outside the run folder: %q", name)
		}
		if _, reserved := files[name]; reserved || name == processFileName {
			return nil, spec, nil, nil, fmt.Errorf("the harness asked for the worker's own file %q", name)
		}
		files[name] = content
	}
	for name, content := range files {
		p := filepath.Join(r.runDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, spec, nil, nil, fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return nil, spec, nil, nil, fmt.Errorf("write %s: %w", name, err)
		}
	}

	program := spec.Program
	if program == "" {
		return nil, spec, nil, nil, errors.New("the harness gave no program to run")
	}
	if !filepath.IsAbs(program) {
		if program, err = exec.LookPath(program); err != nil {
			return nil, spec, nil, nil, fmt.Errorf("find the program: %w", err)
		}
	}
	resultFile := req.ResultFile
	if spec.ResultFile != "" {
		resultFile = spec.ResultFile
	}
	runEnv := map[string]string{
		"CROSSCHAT_MCP_URL":     o.MCPURL,
		"CROSSCHAT_TOKEN":       r.token,
		"CROSSCHAT_AGENT":       r.cfg.AgentSlug,
		"CROSSCHAT_TASK_ID":     r.task.ID,
		"CROSSCHAT_TASK_FILE":   req.PromptFile,
		"CROSSCHAT_RESULT_FILE": resultFile,
		"CROSSCHAT_EXTRA_DIRS":  strings.Join(extra, string(os.PathListSeparator)),
	}
	env, withheld := ChildEnv(o.Env(), r.cfg, runEnv, spec.Env, runtime.GOOS)
	cmd := &exec.Cmd{
		Path:      program,
		Args:      append([]string{program}, spec.Args...),
		Dir:       r.cfg.Workdir,
		Env:       env,
		WaitDelay: waitDelay,
	}
	if spec.Stdin != "" {
		cmd.Stdin = strings.NewReader(spec.Stdin)
	}
	prepare(cmd)
	events := spec.Events
	if events == "" {
		events = relay.EventsPlain
	}
	return cmd, spec, o.Harness.Parser(events), withheld, nil
}

// promptInput gathers what the prompt is built from, and the CLI session to
// resume.
func (r *runState) promptInput(ctx context.Context, extra []string) (relay.PromptInput, string) {
	o := r.w.m.opts
	agentOf := func(slug string) relay.Agent {
		a, err := o.Relay.GetAgent(ctx, slug)
		if err != nil {
			return relay.Agent{Slug: slug, DisplayName: slug}
		}
		return a
	}
	in := relay.PromptInput{
		Task:      r.task,
		Agent:     agentOf(r.cfg.AgentSlug),
		Sender:    agentOf(r.task.SenderSlug),
		ExtraDirs: extra,
	}
	if r.task.ParentTaskID != "" {
		if p, err := o.Relay.Task(ctx, r.task.ParentTaskID); err == nil {
			in.ParentTitle = p.Title
		}
	}
	limit := relay.DefaultChainLimit
	if s, err := o.Relay.Settings(ctx); err == nil {
		limit = s.MaxChainDepth
	}
	in.HandOffsLeft = max(limit-r.task.Depth, 0)
	var resume string
	if s, ok, err := o.Relay.RunSession(ctx, r.task.ID); err == nil && ok && s.SessionID != "" &&
		s.Harness == r.cfg.Harness && filepath.Clean(s.Workdir) == filepath.Clean(r.cfg.Workdir) {
		resume = s.SessionID
		in.Resumed = true
	}
	return in, resume
}

// spawnAndWait starts the CLI and waits for it, renewing the lease,
// watching for cancellation and enforcing the time limit.
func (r *runState) spawnAndWait(ctx context.Context, extra []string) (ex execResult) {
	m := r.w.m
	o := m.opts
	bg := context.WithoutCancel(ctx)
	slug := r.cfg.AgentSlug

	cmd, spec, parser, withheld, err := r.prepareRun(ctx, extra)
	ex.withheld = withheld
	if err != nil {
		ex.setupErr = err
		ex.stopped = ctx.Err() != nil
		return ex
	}
	plain := spec.Events == "" || spec.Events == relay.EventsPlain
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
	cmd.Stdout, cmd.Stderr = stdout, stderr

	// Subscribe before starting, so a cancellation is never missed.
	changes, unsubscribe := o.Relay.Subscribe(256)
	defer unsubscribe()
	if err := cmd.Start(); err != nil {
		ex.setupErr = fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
		return ex
	}
	tr, err := attach(cmd)
	if err != nil {
		// Windows without a job object: taskkill /T still reaches the tree.
		ex.errs = append(ex.errs, fmt.Errorf("track the process tree: %w", err))
	}
	proc := fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, filepath.Base(cmd.Path))
	if st := processStart(cmd.Process.Pid); st != "" {
		proc += st + "\n"
	}
	if err := os.WriteFile(filepath.Join(r.runDir, processFileName), []byte(proc), 0o600); err != nil {
		ex.errs = append(ex.errs, fmt.Errorf("write the process file: %w", err))
	}

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := time.NewTimer(time.Duration(r.cfg.TimeoutMinutes) * o.MinuteLength)
	defer timeout.Stop()
	renew := time.NewTicker(o.RenewEvery)
	defer renew.Stop()
	check := time.NewTicker(o.CancelCheckEvery)
	defer check.Stop()
	beat := time.NewTicker(heartbeatEvery)
	defer beat.Stop()

	var killed chan struct{}
	kill := func() {
		if killed == nil {
			killed = make(chan struct{})
			go func() {
				defer close(killed)
				tr.kill(o.KillGrace)
			}()
		}
	}
	cancelledNow := func() bool {
		t, err := o.Relay.Task(bg, r.task.ID)
		return err == nil && t.Status == relay.StatusCancelled
	}
	stop := ctx.Done()
	var waitErr error
wait:
	for {
		select {
		case waitErr = <-done:
			break wait
		case <-m.abandoned:
			ex.abandoned = true
			return ex
		case <-stop:
			stop = nil
			if m.isAbandoned() {
				ex.abandoned = true
				return ex
			}
			ex.stopped = true
			kill()
		case <-timeout.C:
			ex.timedOut = true
			kill()
		case <-renew.C:
			if _, err := o.Relay.RenewLease(bg, slug, r.task.ID, LeaseSeconds); err != nil && cancelledNow() {
				ex.cancelled = true
				kill()
			}
		case <-check.C:
			if cancelledNow() {
				ex.cancelled = true
				kill()
			}
		case <-beat.C:
			_, _ = o.Relay.Heartbeat(bg, slug) // presence only
		case c, ok := <-changes:
			if !ok {
				changes = nil // dropped for falling behind: the timer still checks
				continue
			}
			if c.Type == relay.ChangeTask && c.Task != nil && c.Task.ID == r.task.ID && c.Task.Status == relay.StatusCancelled {
				ex.cancelled = true
				kill()
			}
		}
	}
	if killed != nil {
		<-killed
	}
	// Whatever the CLI left running in its group goes too.
	tr.kill(o.KillGrace)
	tr.release()
	stdout.flush()
	stderr.flush()

	ex.exitCode = -1
	if cmd.ProcessState != nil {
		ex.exitCode = cmd.ProcessState.ExitCode()
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		ex.errs = append(ex.errs, fmt.Errorf("wait for %s: %w", filepath.Base(cmd.Path), waitErr))
	}
	if spec.ResultFile != "" {
		if b, err := os.ReadFile(spec.ResultFile); err == nil {
			ex.answer = strings.TrimSpace(string(b))
		}
	}
	if ex.answer == "" {
		ex.answer = strings.TrimSpace(parser.Answer())
	}
	if ex.answer == "" && plain {
		ex.answer = strings.TrimSpace(stdout.text())
	}
	ex.answer = strings.ToValidUTF8(ex.answer, "\uFFFD")
	ex.stdoutTail = stdout.tail()
	ex.stderrTail = stderr.tail()
	ex.sessionID = parser.SessionID()
	return ex
}

// fileLine is a harness-reported file step line ("Added /x", "Edit y").
var fileLine = regexp.MustCompile(`^\s*(Added|Updated|Deleted|Write|Edit)\s+(.+?)\s*$`)

// noteFiles remembers the files the CLI says it wrote, for when a snapshot
// was incomplete.
func (r *runState) noteFiles(entries []relay.ActivityEntry) {
	for _, e := range entries {
		if e.Kind != relay.StepFile {
			continue
		}
		for _, line := range strings.Split(e.Text, "\n") {
			mt := fileLine.FindStringSubmatch(line)
			if mt == nil {
				continue
			}
			p := mt[2]
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.cfg.Workdir, p)
			}
			change := relay.FileChanged
			switch mt[1] {
			case "Added":
				change = relay.FileAdded
			case "Deleted":
				change = relay.FileDeleted
			}
			r.mu.Lock()
			if len(r.reported) < maxReported {
				r.reported = append(r.reported, relay.ChangedFile{Path: filepath.Clean(p), Change: change})
			}
			r.mu.Unlock()
		}
	}
}

// filesText is the files entry's text: "Files: 2 added, 1 changed".
func filesText(files []relay.ChangedFile) string {
	n := map[string]int{}
	for _, f := range files {
		n[f.Change]++
	}
	var parts []string
	for _, c := range []string{relay.FileAdded, relay.FileChanged, relay.FileDeleted} {
		if n[c] > 0 {
			parts = append(parts, strconv.Itoa(n[c])+" "+c)
		}
	}
	return "Files: " + strings.Join(parts, ", ")
}

// errorText is an error's text for a person.
func errorText(err error) string {
	if relay.IsDomain(err) {
		return relay.ErrorMessage(err)
	}
	return err.Error()
}
