package cli

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/session"
)

// workersCmd runs `crosschat-relay workers list|set|remove|pause|resume`.
func workersCmd(args []string, stdout, stderr io.Writer) error {
	action, rest, err := verbAction("workers", args, "list", "set", "remove", "pause", "resume")
	if err != nil {
		return err
	}
	c, err := newCommand("workers "+action, stdout, stderr)
	if err != nil {
		return err
	}
	switch action {
	case "list":
		if err := c.parse(rest); err != nil {
			return err
		}
		var out app.WorkersOverview
		if done, err := c.fetch("Workers", "List", &out); done || err != nil {
			return err
		}
		state := "running"
		if out.Paused {
			state = "paused"
		}
		fmt.Fprintf(stdout, "Workers are %s; hand-off limit %d.\n", state, out.MaxChainDepth)
		return c.table("AGENT\tHARNESS\tSTATE\tWORKDIR\tSENDERS\tLIMITS\tLAST RUN", func(tw io.Writer) {
			for _, w := range out.Workers {
				last := "—"
				if w.LastRun != nil {
					last = w.LastRun.Outcome + ": " + w.LastRun.Title
				}
				st := string(w.State)
				if w.ResumesAt != "" {
					st += " until " + w.ResumesAt
				}
				harness := w.Harness
				if w.SessionID != "" {
					harness += " in session “" + w.SessionLabel + "”"
				} else if w.AnySession {
					harness += " in any session"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d min, %d/h\t%s\n", termSafe(w.AgentSlug), termSafe(harness), termSafe(st), termSafe(w.Workdir), termSafe(strings.Join(w.AllowedSenders, ",")), w.TimeoutMinutes, w.RunsPerHour, termSafe(last))
			}
		})
	case "set":
		return workersSet(c, rest)
	case "remove":
		if err := c.parse(rest); err != nil {
			return err
		}
		if len(c.args) == 0 {
			return fmt.Errorf("%w: workers remove needs the agent's slug", errUsage)
		}
		if err := c.call("Workers", "Remove", nil, c.args[0]); err != nil {
			return err
		}
		if c.json {
			return c.printJSON(map[string]bool{"removed": true})
		}
		fmt.Fprintf(stdout, "The worker of %s is removed; its chat sessions get its tasks again.\n", termSafe(c.args[0]))
		return nil
	case "pause", "resume":
		if err := c.parse(rest); err != nil {
			return err
		}
		var paused bool
		if err := c.call("Workers", "SetPaused", &paused, action == "pause"); err != nil {
			return err
		}
		return c.report("paused", paused, "Workers are paused: no new tasks are claimed (a running task finishes).", "Workers resumed.")
	}
	return nil
}

func workersSet(c *command, args []string) error {
	cfg := relay.WorkerConfig{Enabled: true}
	var extra, argv, senders, env, allow stringList
	var prompt, sessions string
	var timeout time.Duration
	c.fs.StringVar(&cfg.Harness, "harness", "", "agent CLI `ID`: claude-code, codex, gemini, opencode, zcode, codewhale or custom (see crosschat-relay harnesses)")
	c.fs.StringVar(&cfg.Workdir, "workdir", "", "working folder the CLI runs in (absolute)")
	c.fs.Var(&extra, "extra-dir", "another folder the CLI may use, repeatable")
	c.fs.StringVar(&cfg.Command, "command", "", "the program's `PATH` (default: the one found on the relay's PATH, see crosschat-relay harnesses)")
	c.fs.Var(&argv, "arg", "argument of a custom program, repeatable; placeholders {prompt_file} {result_file} {mcp_config} {mcp_url} {workdir}")
	c.fs.StringVar(&prompt, "prompt", "stdin", "how a custom program gets the prompt: stdin, file or argument")
	c.fs.Var(&senders, "allow-sender", "slug whose tasks it takes, repeatable (default: you, the operator; given, it replaces the list)")
	c.fs.DurationVar(&timeout, "timeout", 30*time.Minute, "time limit per task")
	c.fs.IntVar(&cfg.RunsPerHour, "runs-per-hour", relay.DefaultRunsPerHour, "at most this many runs per hour")
	c.fs.BoolVar(&cfg.Exclusive, "exclusive", true, "only this worker gets the agent's tasks (chat sessions get none)")
	c.fs.BoolVar(&cfg.Enabled, "enabled", true, "run tasks (false keeps the setup but stops claiming)")
	c.fs.Var(&env, "env", "name of a variable of the relay's environment to pass to the CLI, repeatable")
	c.fs.StringVar(&cfg.Session, "session", "", "deliver each task into this existing Claude Code session or Codex thread (its `ID` or exact name, see crosschat-relay sessions list) instead of fresh runs")
	c.fs.StringVar(&sessions, "sessions", "", "any: deliver a task that names a session (targetSession, id or exact name) into that session of the CLI, if it ran in the worker's folders; other tasks run fresh")
	c.fs.StringVar(&cfg.Sandbox, "sandbox", "", "on or off: confine each run to its folders (default: on for claude-code, codex and gemini, off for the others)")
	c.fs.Var(&allow, "allow-path", "another path a sandboxed run may read (PATH) or read and write (PATH:rw), repeatable")
	c.fs.BoolVar(&cfg.AllowUnsandboxed, "allow-unsandboxed", false, "run without the sandbox, with a warning in the run log, where the system cannot confine runs (otherwise such runs are blocked)")
	c.fs.BoolVar(&cfg.AllowHookEdits, "allow-hook-edits", false, "let sandboxed runs change git configuration and hooks and the agent CLIs' project settings (.claude, .mcp.json, .codex, .gemini, .agents) in their folders (otherwise their changes are undone after the run)")
	if err := c.parse(args); err != nil {
		return err
	}
	if len(c.args) == 0 {
		return fmt.Errorf("%w: workers set needs the agent's slug: crosschat-relay workers set <slug> --harness ID --workdir DIR", errUsage)
	}
	cfg.AgentSlug = c.args[0]
	cfg.AllowPaths = allow
	if sessions != "" && sessions != "any" {
		return fmt.Errorf("%w: --sessions takes only any", errUsage)
	}
	cfg.AnySession = sessions == "any"
	cfg.ExtraDirs, cfg.Args, cfg.Env = extra, argv, env
	cfg.PromptMode = relay.PromptMode(prompt)
	cfg.TimeoutMinutes = int(timeout.Minutes())
	if timeout > 0 && cfg.TimeoutMinutes == 0 {
		cfg.TimeoutMinutes = 1
	}
	cfg.AllowedSenders = senders
	var list app.WorkersOverview
	if err := c.call("Workers", "List", &list); err != nil {
		return err
	}
	if i := slices.IndexFunc(list.Workers, func(w relay.WorkerStatus) bool { return strings.EqualFold(w.AgentSlug, cfg.AgentSlug) }); i >= 0 {
		cfg = mergeWorker(c.fs, list.Workers[i].WorkerConfig, cfg)
	} else if cfg.Harness == "" || cfg.Workdir == "" {
		return fmt.Errorf("%w: workers set needs --harness and --workdir for an agent with no worker yet", errUsage)
	}
	if len(cfg.AllowedSenders) == 0 {
		var info app.Info
		if err := c.call("Overview", "Info", &info); err != nil {
			return err
		}
		cfg.AllowedSenders = []string{info.OperatorSlug}
	}
	var st relay.WorkerStatus
	if done, err := c.fetch("Workers", "Save", &st, cfg); done || err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "Worker of %s saved: %s in %s, tasks from %s (%s).\n", termSafe(st.AgentSlug), termSafe(st.Harness), termSafe(st.Workdir), termSafe(strings.Join(st.AllowedSenders, ", ")), termSafe(string(st.State)))
	if st.SessionID != "" {
		fmt.Fprintf(c.stdout, "Each task is delivered into the session %q (%s).\n", st.SessionLabel, termSafe(st.SessionID))
	}
	if st.AnySession {
		fmt.Fprintf(c.stdout, "A task that names a session is delivered into it (any %s session that ran in the worker's folders, among the newest %d); others run fresh.\n", termSafe(st.Harness), session.RecentBound)
	}
	if st.SandboxOn() {
		line := "Runs are sandboxed: they reach their folders and nothing else of yours"
		if len(st.AllowPaths) > 0 {
			line += ", and " + strings.Join(st.AllowPaths, ", ")
		}
		fmt.Fprintln(c.stdout, line+".")
		if st.AllowHookEdits {
			fmt.Fprintln(c.stdout, "Runs may change git configuration and hooks and the agent CLIs' project settings in their folders (--allow-hook-edits).")
		} else {
			fmt.Fprintln(c.stdout, "A run's changes to git configuration and hooks and to the agent CLIs' project settings in its folders are undone after it.")
		}
	} else {
		fmt.Fprintln(c.stdout, "Runs are not sandboxed: they can reach every file of yours (--sandbox on confines them).")
	}
	return nil
}

// workerFields are the WorkerConfig fields of workers set's flags.
var workerFields = map[string]string{"harness": "Harness", "workdir": "Workdir", "extra-dir": "ExtraDirs", "command": "Command",
	"arg": "Args", "prompt": "PromptMode", "allow-sender": "AllowedSenders", "timeout": "TimeoutMinutes", "runs-per-hour": "RunsPerHour",
	"exclusive": "Exclusive", "enabled": "Enabled", "env": "Env", "session": "Session", "sessions": "AnySession", "sandbox": "Sandbox",
	"allow-path": "AllowPaths", "allow-unsandboxed": "AllowUnsandboxed", "allow-hook-edits": "AllowHookEdits"}

// mergeWorker is the worker old with the settings of the flags fs was
// given (a repeatable flag's list replaced whole) taken from given: workers
// set on a worker changes only what its command line names. A session
// named ends --sessions any, and --sessions any a bound session. A new
// --harness drops the old CLI's program, arguments, prompt mode and
// session, unless given too, and keeps the sandbox as it was.
func mergeWorker(fs *flag.FlagSet, old, given relay.WorkerConfig) relay.WorkerConfig {
	was := old
	to, from := reflect.ValueOf(&old).Elem(), reflect.ValueOf(given)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if field, ok := workerFields[f.Name]; ok {
			set[f.Name] = true
			to.FieldByName(field).Set(from.FieldByName(field))
		}
	})
	if set["session"] && old.Session != "" && !set["sessions"] {
		old.AnySession = false
	}
	if set["sessions"] && old.AnySession && !set["session"] {
		old.Session = ""
	}
	if old.Harness != was.Harness {
		// Another CLI: its program is looked up again (the saved path was
		// the old one's), and what was the old one's goes unless named
		// again; the sandbox stays as it was, not the new CLI's default.
		for flagName, clear := range map[string]func(){
			"command":  func() { old.Command = "" },
			"arg":      func() { old.Args = nil },
			"prompt":   func() { old.PromptMode = "" },
			"session":  func() { old.Session, old.SessionID, old.SessionLabel = "", "", "" },
			"sessions": func() { old.AnySession = false },
		} {
			if !set[flagName] {
				clear()
			}
		}
		if !set["sandbox"] {
			old.Sandbox = relay.SandboxOff
			if was.SandboxOn() {
				old.Sandbox = relay.SandboxOn
			}
		}
	}
	return old
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
