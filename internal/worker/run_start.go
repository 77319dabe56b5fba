package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Run folder files.
const (
	promptFileName = "task.md"
	resultFileName = "result.md"
	mcpFileName    = "mcp.json"
	// processFileSuffix ends the name of a run's process file, beside its
	// run folder (see processFile).
	processFileSuffix = ".process"
)

// prepareRun writes the run folder and builds the command.
func (r *runState) prepareRun(ctx context.Context, extra []string) (*exec.Cmd, runspec.Spec, runspec.StreamParser, []string, error) {
	o := r.w.m.opts
	if err := os.MkdirAll(o.RunRoot, 0o700); err != nil {
		return nil, runspec.Spec{}, nil, nil, fmt.Errorf("create the run folder: %w", err)
	}
	if err := os.RemoveAll(r.runDir); err != nil {
		return nil, runspec.Spec{}, nil, nil, fmt.Errorf("clear the run folder: %w", err)
	}
	if err := os.Mkdir(r.runDir, 0o700); err != nil {
		return nil, runspec.Spec{}, nil, nil, fmt.Errorf("create the run folder: %w", err)
	}
	req := runspec.Request{
		Config:        r.cfg,
		RunDir:        r.runDir,
		PromptFile:    filepath.Join(r.runDir, promptFileName),
		ResultFile:    filepath.Join(r.runDir, resultFileName),
		MCPConfigFile: filepath.Join(r.runDir, mcpFileName),
		MCPURL:        o.MCPURL,
		Server:        r.server,
		ExtraDirs:     extra,
	}
	in, resume := r.promptInput(ctx, extra)
	if r.turn != nil {
		resume, in.Resumed = r.turn.info.ID, false
		in.RequestToken = r.turn.token
	}
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
	mcp, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{runspec.RunServer: map[string]any{
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
		if _, reserved := files[name]; reserved {
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
	// The conversation the run's hand-offs continue (see relay.Task).
	runEnv["CROSSCHAT_CONVERSATION_ID"] = r.task.ConversationID
	relayEnv := o.Env()
	runEnv["NO_PROXY"] = noProxy(relayEnv, o.MCPURL)
	runEnv["no_proxy"] = runEnv["NO_PROXY"]
	env, withheld := ChildEnv(relayEnv, r.cfg, runEnv, spec.Env, runtime.GOOS)
	r.image = filepath.Base(program)
	args := spec.Args
	if program, args, err = r.sandbox(program, args, spec.ConfinedArgs, env, extra, []string{resultFile}); err != nil {
		return nil, spec, nil, withheld, err
	}
	cmd := &exec.Cmd{
		Path:      program,
		Args:      append([]string{program}, args...),
		Dir:       cmp.Or(r.workdir, r.cfg.Workdir),
		Env:       env,
		WaitDelay: waitDelay,
	}
	if spec.Stdin != "" {
		cmd.Stdin = strings.NewReader(spec.Stdin)
	}
	prepare(cmd)
	events := spec.Events
	if events == "" {
		events = runspec.EventsPlain
	}
	return cmd, spec, o.Harness.Parser(events), withheld, nil
}

// promptInput gathers what the prompt is built from, and the CLI session to
// resume.
func (r *runState) promptInput(ctx context.Context, extra []string) (runspec.PromptInput, string) {
	o := r.w.m.opts
	agentOf := func(slug string) relay.Agent {
		a, err := o.Relay.GetAgent(ctx, slug)
		if err != nil {
			return relay.Agent{Slug: slug, DisplayName: slug}
		}
		return a
	}
	in := runspec.PromptInput{
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
	in.HandOffsLeft = max(limit-r.task.Hops, 0)
	var resume string
	if s, ok, err := o.Relay.RunSession(ctx, r.task.ID); err == nil && ok && s.SessionID != "" &&
		s.Harness == r.cfg.Harness && filepath.Clean(s.Workdir) == filepath.Clean(r.cfg.Workdir) {
		resume = s.SessionID
		in.Resumed = true
	}
	return in, resume
}

// processFile is where a run's process file lives: beside its run folder in
// RunRoot, not inside it, since an unsandboxed run may write its run folder
// (a sandboxed one only its result file and temporary folder there) and
// must not be able to name a process of the user's for the next start's
// Recover to kill.
func processFile(runRoot, taskID string) string {
	return filepath.Join(runRoot, taskID+processFileSuffix)
}

// writeProcessFile records the started CLI (pid, program and, where known,
// start time) in its process file, so a relay that crashed can stop it on
// its next start (see Recover). It writes a new temporary file, never
// following a link, and renames it into place.
func (r *runState) writeProcessFile(cmd *exec.Cmd) error {
	image := r.image
	if image == "" {
		image = filepath.Base(cmd.Path)
	}
	proc := fmt.Sprintf("%d\n%s\n", cmd.Process.Pid, image)
	if st := processStart(cmd.Process.Pid); st != "" {
		proc += st + "\n"
	}
	path := processFile(r.w.m.opts.RunRoot, r.task.ID)
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := createNoFollow(tmp)
	if err != nil {
		return fmt.Errorf("write the process file: %w", err)
	}
	_, err = f.WriteString(proc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write the process file: %w", err)
	}
	return nil
}
