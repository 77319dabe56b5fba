package harness

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Fixed prompts of presets whose task text arrives on stdin or in a file.
const (
	geminiPrompt   = "Complete the task described above."
	attachedPrompt = "Complete the task described in the attached file."
	filePrompt     = "Complete the task described in this file:"
)

// CodewhaleMCPFile is the run-dir file Codewhale reads its MCP servers from
// (through DEEPSEEK_MCP_CONFIG). It names the token's variable, never the token.
const CodewhaleMCPFile = "codewhale-mcp.json"

// ClaudeMCPFile is the run-folder MCP configuration Claude Code reads the
// run's own server from (--mcp-config). It marks that server "alwaysLoad":
// Claude Code 2.1.332 otherwise defers MCP tools behind its ToolSearch tool,
// so the model would not see the relay's tools the prompt names (2.1.197
// accepts the key and always sent the tools). Only the run's server gets it;
// the token stays a reference to the run's environment, never on disk.
const ClaudeMCPFile = "claude-mcp.json"

// GeminiSettingsFile is the run-folder settings file that gives a Gemini run
// the relay's tools (as Gemini's system settings, with the server trusted).
const GeminiSettingsFile = "gemini-settings.json"

// ErrCannotRun is returned (wrapped) by Build for presets a worker cannot run.
var ErrCannotRun = errors.New("this agent can't run tasks unattended")

// sessionID reports whether id can be put on a CLI's command line as a
// session to resume: letters, digits, '-' and '_' (a UUID), not starting
// with '-', so it is never read as an option.
func sessionID(id string) bool {
	if len(id) > 128 || strings.HasPrefix(id, "-") {
		return false
	}
	return strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" && id != ""
}

// Build returns the command of one run of req.Config.Harness on goos: the
// exact arguments of the preset (or the custom template with its
// placeholders substituted), how the prompt reaches the CLI, where its
// answer is, its output format and the MCP server name of the relay's tools.
//
// Presets never put the task text on the command line: it goes to standard
// input or stays in req.PromptFile. When req.ResumeSession is set, Claude
// Code (--resume=ID), Codex (exec resume ID) and Gemini CLI (--resume) continue
// that session; other presets start afresh.
//
// Scripts (.js, .cjs, .mjs) run with node from PATH, the script first. On
// Windows, a .cmd or .bat npm shim runs as the program it wraps, or Build
// fails when the wrapped program can't be found in the shim.
func Build(req runspec.Request, goos string) (runspec.Spec, error) {
	c := req.Config
	p, ok := Lookup(c.Harness)
	if !ok {
		return runspec.Spec{}, fmt.Errorf("build %q: unknown harness", c.Harness)
	}
	if !p.CanRun {
		return runspec.Spec{}, fmt.Errorf("build %s: %w", p.Name, ErrCannotRun)
	}
	if strings.TrimSpace(c.Command) == "" {
		return runspec.Spec{}, fmt.Errorf("build %s: no command", p.Name)
	}
	if req.ResumeSession != "" && !sessionID(req.ResumeSession) {
		return runspec.Spec{}, fmt.Errorf("build %s: %q is not a session id (letters, digits, '-' and '_', not starting with '-')", p.Name, req.ResumeSession)
	}
	spec := runspec.Spec{Events: p.Events, RelayServer: p.RelayServer}
	var args []string
	switch p.ID {
	case ClaudeCode:
		args = []string{"-p", "--output-format", "stream-json", "--verbose",
			"--permission-mode", "acceptEdits",
			"--mcp-config", joinPath(goos, req.RunDir, ClaudeMCPFile),
			// Only the run's own server: not the user's (the one-step
			// Connect's "crosschat", with the agent's token), nor a project's.
			"--strict-mcp-config",
			"--allowedTools", "mcp__" + runspec.RunServer}
		for _, d := range req.ExtraDirs {
			args = append(args, "--add-dir", d)
		}
		if req.ResumeSession != "" {
			args = append(args, "--resume="+req.ResumeSession) // one argument: never read as an option
		}
		spec.Stdin = req.Prompt
		cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{runspec.RunServer: map[string]any{
			"type": "http", "url": req.MCPURL, "headers": map[string]string{"Authorization": "Bearer ${CROSSCHAT_TOKEN}"},
			"alwaysLoad": true}}})
		if err != nil {
			return runspec.Spec{}, fmt.Errorf("build %s: %w", p.Name, err)
		}
		spec.Files = map[string]string{ClaudeMCPFile: string(cfg)}
	case Codex:
		codexArgs := func(mode string) []string {
			a := []string{"exec", "--sandbox", mode, "--skip-git-repo-check", "--cd", c.Workdir}
			for _, d := range req.ExtraDirs {
				a = append(a, "--add-dir", d)
			}
			if req.ResumeSession != "" {
				// exec resume has no --sandbox, --cd or --add-dir of its own:
				// they stay on exec, before the subcommand.
				a = append(a, "resume", req.ResumeSession)
			}
			return append(a, "--output-last-message", req.ResultFile, "--json",
				"-c", `mcp_servers.`+UserServer+`.url=`+tomlString(req.MCPURL),
				"-c", `mcp_servers.`+UserServer+`.bearer_token_env_var="CROSSCHAT_TOKEN"`,
				"-c", `mcp_servers.`+UserServer+`.http_headers={}`,
				"-c", `mcp_servers.`+UserServer+`.default_tools_approval_mode="approve"`,
				"-")
		}
		args = codexArgs("workspace-write")
		if (goos == "linux" || goos == "darwin") && c.SandboxOn() {
			// In the worker's sandbox Codex's own cannot start (Landlock
			// forbids the mounts bubblewrap makes; macOS refuses a sandbox
			// inside a sandbox): the worker's confines Codex and its
			// commands to the same folders instead. Only where the run is
			// actually confined: otherwise Codex keeps its own.
			spec.ConfinedArgs = codexArgs("danger-full-access")
		}
		spec.Stdin = req.Prompt
		spec.ResultFile = req.ResultFile
	case Gemini:
		args = []string{"-p", geminiPrompt, "--approval-mode", "auto_edit"}
		if len(req.ExtraDirs) > 0 {
			args = append(args, "--include-directories", strings.Join(req.ExtraDirs, ","))
		}
		if req.ResumeSession != "" {
			args = append(args, "--resume", req.ResumeSession)
		}
		// Only the run's own server (Gemini's --strict-mcp-config): not the
		// user's (the one-step Connect's, with the agent's token), nor an
		// extension's or a project's. Its name is the run's own
		// (req.Server): a working folder's .gemini/settings.json outranks
		// the home's, and an entry of a name known beforehand there would
		// replace the run's server and get the run's token.
		server := cmp.Or(req.Server, runspec.RunServer)
		spec.RelayServer = server
		args = append(args, "--allowed-mcp-server-names="+server, "--output-format", "stream-json")
		spec.Stdin = req.Prompt
		// Headless Gemini refuses MCP tools unless their server is trusted.
		// A confined run (Linux) has the run's server in its CLI home's
		// settings (RunSettings). It is also in a settings file of the run
		// folder, read as Gemini's system settings, which Gemini takes only
		// when root owns it and every folder above it: the one way for an
		// unconfined run, and only as root. The token stays a reference to
		// the run's environment, never written to disk.
		cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{server: map[string]any{
			"httpUrl": req.MCPURL, "headers": map[string]string{"Authorization": "Bearer ${CROSSCHAT_TOKEN}"}, "trust": true}}})
		if err != nil {
			return runspec.Spec{}, fmt.Errorf("build %s: %w", p.Name, err)
		}
		spec.Files = map[string]string{GeminiSettingsFile: string(cfg)}
		spec.Env = map[string]string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH": joinPath(goos, req.RunDir, GeminiSettingsFile)}
	case OpenCode:
		args = []string{"run", "--dir", c.Workdir, "-f", req.PromptFile, attachedPrompt}
	case ZCode:
		args = []string{"--prompt", attachedPrompt, "--attach", req.PromptFile, "--cwd", c.Workdir, "--mode", "edit"}
	case Codewhale:
		args = []string{"exec", "--auto", "--sandbox", "workspace-write", filePrompt, req.PromptFile}
		cfg, err := json.Marshal(map[string]any{"servers": map[string]any{UserServer: map[string]any{
			"url": req.MCPURL, "bearer_token_env_var": "CROSSCHAT_TOKEN"}}})
		if err != nil {
			return runspec.Spec{}, fmt.Errorf("build %s: %w", p.Name, err)
		}
		spec.Files = map[string]string{CodewhaleMCPFile: string(cfg)}
		spec.Env = map[string]string{"DEEPSEEK_MCP_CONFIG": joinPath(goos, req.RunDir, CodewhaleMCPFile)}
	case Custom:
		var err error
		if args, spec, err = buildCustom(req, spec, goos); err != nil {
			return runspec.Spec{}, err
		}
	}
	program, pre, err := resolveProgram(c.Command, goos)
	if err != nil && p.ID == Custom && isBatch(c.Command, goos) {
		// The user's own batch script (not an npm shim) runs as it is.
		program, pre, err = c.Command, nil, batchSafe(c.Command, args, c.PromptMode)
	}
	if err != nil {
		return runspec.Spec{}, fmt.Errorf("build %s: %w", p.Name, err)
	}
	spec.Program = program
	if spec.ConfinedArgs != nil {
		spec.ConfinedArgs = append(append([]string{}, pre...), spec.ConfinedArgs...)
	}
	spec.Args = append(pre, args...)
	return spec, nil
}

func buildCustom(req runspec.Request, spec runspec.Spec, goos string) ([]string, runspec.Spec, error) {
	c := req.Config
	r := strings.NewReplacer(
		"{prompt_file}", req.PromptFile,
		"{result_file}", req.ResultFile,
		"{mcp_config}", req.MCPConfigFile,
		"{mcp_url}", req.MCPURL,
		"{workdir}", c.Workdir,
	)
	args := make([]string, 0, len(c.Args)+1)
	for _, a := range c.Args {
		if strings.Contains(a, "{result_file}") {
			spec.ResultFile = req.ResultFile
		}
		if strings.Contains(a, "{mcp_config}") {
			spec.RelayServer = runspec.RunServer
		}
		args = append(args, r.Replace(a))
	}
	switch c.PromptMode {
	case relay.PromptStdin, "":
		spec.Stdin = req.Prompt
	case relay.PromptFile:
	case relay.PromptArgument:
		if promptTooLong(goos, c.Command, args, req.Prompt) {
			// The system would refuse the command: the argument says where
			// the task is, and standard input carries it too.
			args = append(args, "The task is too long for a command line. Read it from the file "+req.PromptFile+
				" (it is also on standard input).")
			spec.Stdin = req.Prompt
			break
		}
		args = append(args, req.Prompt)
	default:
		return nil, spec, fmt.Errorf("build custom: unknown prompt mode %q", c.PromptMode)
	}
	return args, spec, nil
}

// Command-line limits: Windows' CreateProcess takes at most 32,767 UTF-16
// units for the whole command line; Linux takes at most 128 KiB per argument.
const (
	windowsCommandLine = 32767
	unixArgument       = 128 << 10
)

// promptTooLong reports whether the prompt, as the last argument after
// args, would pass goos's command-line limit (with room for quoting and
// for a node launcher).
func promptTooLong(goos, program string, args []string, prompt string) bool {
	if goos != "windows" {
		return len(prompt) >= unixArgument
	}
	n := len("node ") + utf16Len(program) + 3
	for _, a := range append(args, prompt) {
		n += utf16Len(a) + strings.Count(a, `"`) + strings.Count(a, `\`) + 3
	}
	return n > windowsCommandLine
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

func isScript(path string) bool {
	l := strings.ToLower(path)
	return strings.HasSuffix(l, ".js") || strings.HasSuffix(l, ".cjs") || strings.HasSuffix(l, ".mjs")
}

func isBatch(path, goos string) bool {
	l := strings.ToLower(path)
	return goos == "windows" && (strings.HasSuffix(l, ".cmd") || strings.HasSuffix(l, ".bat"))
}

// batchSafe allows a custom .cmd or .bat program only when nothing on its
// command line is something cmd.exe would interpret: Windows runs a batch
// file through cmd.exe, which expands % and !, and splits at & | < > ^
// outside quotes, whatever quoting the arguments got. So the task never
// goes on the command line (prompt from a file or stdin), and the program's
// path and arguments (the run's file names, the user's own arguments) hold
// none of those characters; parentheses only inside quoted (spaced) words.
func batchSafe(command string, args []string, mode relay.PromptMode) error {
	if mode == relay.PromptArgument {
		return fmt.Errorf("can't run %s safely: a .cmd or .bat program gets the task from a file ({prompt_file}) or standard input, never as an argument (cmd.exe would interpret it)", command)
	}
	for _, a := range append([]string{command}, args...) {
		bad := strings.ContainsAny(a, "\"%!^&|<>") || !strings.ContainsAny(a, " \t") && strings.ContainsAny(a, "()")
		for _, r := range a {
			bad = bad || r < 0x20 || r == 0x7f
		}
		if bad {
			return fmt.Errorf("can't run %s safely: %q holds characters cmd.exe would interpret (\" %% ! ^ & | < > or a line break)", command, a)
		}
	}
	return nil
}

// shimTarget finds the program an npm .cmd shim runs: "%dp0%\…" %* or "%~dp0\…" %*.
var shimTarget = regexp.MustCompile(`(?i)"%~?dp0%?\\?([^"%]+)"\s+%\*`)

// resolveProgram returns the program to start and the arguments that go
// before the preset's own.
func resolveProgram(command, goos string) (string, []string, error) {
	if isScript(command) {
		return "node", []string{command}, nil
	}
	l := strings.ToLower(command)
	if goos != "windows" || !(strings.HasSuffix(l, ".cmd") || strings.HasSuffix(l, ".bat")) {
		return command, nil, nil
	}
	b, err := os.ReadFile(command)
	if err != nil {
		return "", nil, fmt.Errorf("can't run %s safely: %w", command, err)
	}
	m := shimTarget.FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		return "", nil, fmt.Errorf("can't run %s safely: it is not an npm shim whose program could be found", command)
	}
	dir := command[:strings.LastIndexAny(command, `\/`)+1]
	target := dir + strings.TrimLeft(m[len(m)-1][1], `\`)
	lt := strings.ToLower(target)
	switch {
	case isScript(target):
		return "node", []string{target}, nil
	case strings.HasSuffix(lt, ".exe"):
		return target, nil, nil
	}
	return "", nil, fmt.Errorf("can't run %s safely: it wraps %s, which is neither a program nor a script", command, target)
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
