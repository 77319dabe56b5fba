package harness_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

const taskText = "Draw a map of the harbour"

// request returns a run request with paths in the style of goos.
func request(goos, preset string, extra, resume bool) runspec.Request {
	home, sep := "/home/ada", "/"
	switch goos {
	case "darwin":
		home = "/Users/ada"
	case "windows":
		home, sep = `C:\Users\ada`, `\`
	}
	j := func(p ...string) string { return strings.Join(p, sep) }
	cmd := map[string]string{
		harness.ClaudeCode: j(home, ".local", "bin", "claude"),
		harness.Codex:      j(home, "bin", "codex"),
		harness.Gemini:     j(home, "bin", "gemini"),
		harness.OpenCode:   j(home, "bin", "opencode"),
		harness.ZCode:      j(home, "bin", "zcode"),
		harness.Codewhale:  j(home, ".cargo", "bin", "codewhale"),
		harness.Custom:     j(home, "bin", "agent"),
	}[preset]
	if goos == "windows" {
		cmd += ".exe"
	}
	run := j(home, "data", "runs", "t_123")
	req := runspec.Request{
		Config: relay.WorkerConfig{
			AgentSlug: "builder", Harness: preset, Command: cmd,
			Workdir: j(home, "work", "harbour"), PromptMode: relay.PromptStdin,
		},
		RunDir:        run,
		PromptFile:    j(run, "task.md"),
		ResultFile:    j(run, "result.md"),
		MCPConfigFile: j(run, "mcp.json"),
		MCPURL:        "http://127.0.0.1:4318/mcp",
		Server:        runspec.RunServer + "-0a1b2c3d4e5f",
		Prompt:        "## Task: " + taskText + "\n",
	}
	if extra {
		req.ExtraDirs = []string{j(home, "assets"), j(home, "shared docs")}
	}
	if resume {
		req.ResumeSession = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	}
	return req
}

// Ensure every runnable preset gets its exact command on every OS, with and
// without extra folders and a session to resume.
func TestBuildPresets(t *testing.T) {
	for _, p := range harness.Presets() {
		if !p.CanRun || p.ID == harness.Custom {
			continue
		}
		t.Run(p.ID, func(t *testing.T) {
			var out bytes.Buffer
			for _, goos := range []string{"linux", "darwin", "windows"} {
				for _, v := range []struct {
					name          string
					extra, resume bool
				}{{"plain", false, false}, {"extra dirs", true, false}, {"resume", false, true}, {"extra dirs and resume", true, true}} {
					req := request(goos, p.ID, v.extra, v.resume)
					spec, err := harness.Build(req, goos)
					if err != nil {
						t.Fatalf("%s %s: %v", goos, v.name, err)
					}
					for _, a := range spec.Args {
						if strings.Contains(a, taskText) {
							t.Errorf("%s %s: task text on the command line: %q", goos, v.name, a)
						}
					}
					// Gemini's server has the run's own name: a working
					// folder's settings outrank the home's (runspec.RunServer).
					server := p.RelayServer
					if p.ID == harness.Gemini {
						server = req.Server
					}
					if spec.Events != p.Events || spec.RelayServer != server {
						t.Errorf("%s %s: events %q server %q, want %q %q", goos, v.name, spec.Events, spec.RelayServer, p.Events, server)
					}
					fmt.Fprintf(&out, "## %s, %s\n", goos, v.name)
					out.Write(mustJSON(t, spec))
				}
			}
			golden(t, "build/"+p.ID+".golden", out.Bytes())
		})
	}
}

// Ensure the exact upstream argv of Claude Code and its stdin prompt.
func TestBuildClaudeExact(t *testing.T) {
	spec, err := harness.Build(request("linux", harness.ClaudeCode, true, false), "linux")
	if err != nil {
		t.Fatal(err)
	}
	want := "-p --output-format stream-json --verbose --permission-mode acceptEdits --mcp-config /home/ada/data/runs/t_123/claude-mcp.json --strict-mcp-config --allowedTools mcp__crosschat-run --add-dir /home/ada/assets --add-dir /home/ada/shared docs"
	if got := strings.Join(spec.Args, " "); got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	} else if spec.Stdin == "" || spec.RelayServer != "crosschat-run" || spec.Events != runspec.EventsClaudeStream || spec.ResultFile != "" {
		t.Errorf("spec = %+v", spec)
	}
	// The run's own server, loaded up front (Claude Code 2.1.332 defers MCP
	// tools behind ToolSearch otherwise), with the token left in the
	// environment.
	var cfg struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(spec.Files[harness.ClaudeMCPFile]), &cfg); err != nil {
		t.Fatalf("%s: %v: %q", harness.ClaudeMCPFile, err, spec.Files[harness.ClaudeMCPFile])
	}
	run := cfg.MCPServers["crosschat-run"]
	if len(cfg.MCPServers) != 1 || run["alwaysLoad"] != true || run["url"] != "http://127.0.0.1:4318/mcp" || run["type"] != "http" {
		t.Errorf("%s = %s", harness.ClaudeMCPFile, spec.Files[harness.ClaudeMCPFile])
	}
	if h, _ := run["headers"].(map[string]any); h["Authorization"] != "Bearer ${CROSSCHAT_TOKEN}" {
		t.Errorf("%s headers = %v, want the token as ${CROSSCHAT_TOKEN}", harness.ClaudeMCPFile, run["headers"])
	}
}

// Ensure Codex starts with exec --sandbox workspace-write, ends with "-",
// reads its answer from the result file, and resumes with exec … resume <id>.
func TestBuildCodex(t *testing.T) {
	req := request("linux", harness.Codex, false, true)
	req.Config.Sandbox = relay.SandboxOff
	spec, err := harness.Build(req, "linux")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(spec.Args, " ")
	for _, want := range []string{
		"exec --sandbox workspace-write --skip-git-repo-check --cd /home/ada/work/harbour resume 0199a213-81c0-7800-8aa1-bbab2a035a53 --output-last-message",
		`-c mcp_servers.crosschat.url="http://127.0.0.1:4318/mcp"`,
		`-c mcp_servers.crosschat.bearer_token_env_var="CROSSCHAT_TOKEN"`,
		`-c mcp_servers.crosschat.http_headers={}`,
		`-c mcp_servers.crosschat.default_tools_approval_mode="approve"`,
		" --json ",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	// In the worker's sandbox (the preset's default) Codex's own cannot
	// start (no mounts under Landlock): the worker's confines it instead.
	// Only where the run is actually confined (ConfinedArgs): an
	// unconfined run keeps Codex's own sandbox.
	req.Config.Sandbox = ""
	boxed, err := harness.Build(req, "linux")
	if err != nil || !strings.HasPrefix(strings.Join(boxed.ConfinedArgs, " "), "exec --sandbox danger-full-access ") ||
		!strings.HasPrefix(strings.Join(boxed.Args, " "), "exec --sandbox workspace-write ") {
		t.Errorf("sandboxed on Linux: %q / confined %q, %v", boxed.Args, boxed.ConfinedArgs, err)
	}
	if strings.Join(boxed.ConfinedArgs, " ") != strings.Replace(strings.Join(boxed.Args, " "), "workspace-write", "danger-full-access", 1) {
		t.Errorf("confined args differ beyond the mode: %q vs %q", boxed.ConfinedArgs, boxed.Args)
	}
	if win, err := harness.Build(request("windows", harness.Codex, false, true), "windows"); err != nil || !strings.HasPrefix(strings.Join(win.Args, " "), "exec --sandbox workspace-write ") {
		t.Errorf("Windows (no worker sandbox) keeps Codex's: %q, %v", win.Args, err)
	}
	if spec.Args[len(spec.Args)-1] != "-" {
		t.Errorf("last arg %q, want -", spec.Args[len(spec.Args)-1])
	} else if spec.ResultFile != "/home/ada/data/runs/t_123/result.md" {
		t.Errorf("result file %q", spec.ResultFile)
	}
}

// Ensure Codewhale's MCP file names the token's variable and never the token.
func TestBuildCodewhaleFile(t *testing.T) {
	spec, err := harness.Build(request("linux", harness.Codewhale, false, false), "linux")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spec.Files[harness.CodewhaleMCPFile], `{"servers":{"crosschat":{"bearer_token_env_var":"CROSSCHAT_TOKEN","url":"http://127.0.0.1:4318/mcp"}}}`; got != want {
		t.Errorf("file = %s, want %s", got, want)
	} else if got := spec.Env["DEEPSEEK_MCP_CONFIG"]; got != "/home/ada/data/runs/t_123/codewhale-mcp.json" {
		t.Errorf("DEEPSEEK_MCP_CONFIG = %q", got)
	}
}

// Ensure the custom template substitutes every placeholder and delivers the
// prompt per mode; the result file and relay tools follow the placeholders.
func TestBuildCustom(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode relay.PromptMode
		args []string
	}{
		{"stdin", relay.PromptStdin, []string{"--mcp", "{mcp_config}", "--url={mcp_url}", "--cwd", "{workdir}"}},
		{"file", relay.PromptFile, []string{"run", "{prompt_file}", "--out", "{result_file}"}},
		{"argument", relay.PromptArgument, []string{"--quiet"}},
		{"default mode", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			for _, goos := range []string{"linux", "windows"} {
				req := request(goos, harness.Custom, true, true)
				req.Config.PromptMode = tc.mode
				req.Config.Args = tc.args
				spec, err := harness.Build(req, goos)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "## %s\n", goos)
				out.Write(mustJSON(t, spec))
			}
			golden(t, "build/custom-"+strings.ReplaceAll(tc.name, " ", "-")+".golden", out.Bytes())
		})
	}
}

// Ensure scripts run with node, a plain program is left alone, and presets
// a worker cannot run or unknown ids fail.
func TestBuildPrograms(t *testing.T) {
	for _, tc := range []struct {
		command, goos, program string
		pre                    []string
	}{
		{"/usr/local/bin/claude", "linux", "/usr/local/bin/claude", nil},
		{"/opt/ZCode/resources/glm/zcode.cjs", "linux", "node", []string{"/opt/ZCode/resources/glm/zcode.cjs"}},
		{"/home/ada/agent.mjs", "darwin", "node", []string{"/home/ada/agent.mjs"}},
		{`C:\tools\agent.JS`, "windows", "node", []string{`C:\tools\agent.JS`}},
		{"/home/ada/run.cmd", "linux", "/home/ada/run.cmd", nil},
	} {
		req := request(tc.goos, harness.Custom, false, false)
		req.Config.Command = tc.command
		req.Config.Args = []string{"x"}
		spec, err := harness.Build(req, tc.goos)
		if err != nil {
			t.Fatalf("%s: %v", tc.command, err)
		}
		want := append(append([]string{}, tc.pre...), "x")
		if spec.Program != tc.program || strings.Join(spec.Args, "|") != strings.Join(want, "|") {
			t.Errorf("%s: %s %q, want %s %q", tc.command, spec.Program, spec.Args, tc.program, want)
		}
	}
	req := request("linux", harness.Cursor, false, false)
	req.Config.Command = "/usr/bin/cursor"
	if _, err := harness.Build(req, "linux"); !errors.Is(err, harness.ErrCannotRun) {
		t.Errorf("cursor: err = %v, want ErrCannotRun", err)
	}
	req.Config.Harness = "nope"
	if _, err := harness.Build(req, "linux"); err == nil {
		t.Error("unknown harness: no error")
	}
	req = request("linux", harness.ClaudeCode, false, false)
	req.Config.Command = " "
	if _, err := harness.Build(req, "linux"); err == nil {
		t.Error("empty command: no error")
	}
}

// Ensure Windows npm shims run the program they wrap, and an opaque shim
// is refused as unsafe.
func TestBuildWindowsShims(t *testing.T) {
	dir := t.TempDir()
	sep := string(filepath.Separator)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "\n", "\r\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const shim = "@ECHO off\nGOTO start\n:find_dp0\nSET dp0=%%~dp0\nEXIT /b\n:start\nSETLOCAL\nCALL :find_dp0\n\nIF EXIST \"%%dp0%%\\node.exe\" (\n  SET \"_prog=%%dp0%%\\node.exe\"\n) ELSE (\n  SET \"_prog=node\"\n  SET PATHEXT=%%PATHEXT:;.JS;=;%%\n)\n\nendLocal & goto #_undefined_# 2>NUL || title %%COMSPEC%% & \"%%_prog%%\"  \"%%dp0%%\\%s\" %%*\n"
	for _, tc := range []struct {
		name, body, program string
		pre                 []string
		err                 string
	}{
		{"gemini.cmd", fmt.Sprintf(shim, `node_modules\@google\gemini-cli\bundle\gemini.js`), "node", []string{dir + sep + `node_modules\@google\gemini-cli\bundle\gemini.js`}, ""},
		{"claude.cmd", "@ECHO off\r\n\"%dp0%\\node_modules\\@anthropic-ai\\claude-code\\bin\\claude.exe\"   %*\r\n", dir + sep + `node_modules\@anthropic-ai\claude-code\bin\claude.exe`, nil, ""},
		{"opaque.bat", "@echo off\r\npython -m agent %*\r\n", "", nil, "can't run"},
		{"weird.cmd", "\"%dp0%\\tool.ps1\" %*\r\n", "", nil, "can't run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("windows", harness.Gemini, false, false)
			req.Config.Command = write(tc.name, tc.body)
			spec, err := harness.Build(req, "windows")
			if tc.err != "" {
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Program != tc.program || len(spec.Args) < len(tc.pre) || strings.Join(spec.Args[:len(tc.pre)], "|") != strings.Join(tc.pre, "|") || spec.Args[len(tc.pre)] != "-p" {
				t.Errorf("got %s %q, want %s %q then the preset's args", spec.Program, spec.Args, tc.program, tc.pre)
			}
		})
	}
	req := request("windows", harness.Gemini, false, false)
	req.Config.Command = filepath.Join(dir, "missing.cmd")
	if _, err := harness.Build(req, "windows"); err == nil || !strings.Contains(err.Error(), "can't run") {
		t.Errorf("missing shim: err = %v", err)
	}
}

// Ensure a custom .cmd or .bat program (not an npm shim) runs as it is when
// nothing cmd.exe would interpret reaches its command line, and is refused
// otherwise: never the task as an argument, never % ! ^ & | < > " in its
// path or arguments. Other presets still refuse opaque scripts.
func TestBuildWindowsCustomBatch(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		args          []string
		mode          relay.PromptMode
		err           string
	}{
		{"prompt file", `C:\Crosschat Work\answer.cmd`, []string{"{prompt_file}", "--out", "{result_file}"}, relay.PromptFile, ""},
		{"stdin, parentheses in a quoted path", `C:\Program Files (x86)\agent\run.bat`, nil, relay.PromptStdin, ""},
		{"task as an argument", `C:\work\answer.cmd`, nil, relay.PromptArgument, "never as an argument"},
		{"percent in an argument", `C:\work\answer.cmd`, []string{"--home=%USERPROFILE%", "{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
		{"ampersand in an argument", `C:\work\answer.cmd`, []string{"a&calc", "{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
		{"quote in an argument", `C:\work\answer.cmd`, []string{`x" & calc & "`, "{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
		{"unquoted parenthesis", `C:\work\answer.cmd`, []string{"a)b", "{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
		{"line break", `C:\work\answer.cmd`, []string{"a\r\nb", "{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
		{"caret in its path", `C:\wo^rk\answer.cmd`, []string{"{prompt_file}"}, relay.PromptFile, "cmd.exe would interpret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request("windows", harness.Custom, false, false)
			req.Config.Command, req.Config.Args, req.Config.PromptMode = tc.command, tc.args, tc.mode
			spec, err := harness.Build(req, "windows")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Program != tc.command || len(spec.Args) != len(tc.args) {
				t.Errorf("got %s %q, want %s and %d arguments", spec.Program, spec.Args, tc.command, len(tc.args))
			}
		})
	}
	req := request("windows", harness.Gemini, false, false)
	req.Config.Command = `C:\work\answer.cmd`
	if _, err := harness.Build(req, "windows"); err == nil || !strings.Contains(err.Error(), "can't run") {
		t.Errorf("an opaque batch file as Gemini: err = %v", err)
	}
}

// Ensure Lookup finds every preset, custom is last and each has a safety note.
func TestPresets(t *testing.T) {
	ps := harness.Presets()
	want := []string{"claude-code", "codex", "gemini", "opencode", "zcode", "codewhale", "cursor", "custom"}
	if len(ps) != len(want) {
		t.Fatalf("%d presets, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if p.ID != want[i] {
			t.Errorf("preset %d = %s, want %s", i, p.ID, want[i])
		}
		if q, ok := harness.Lookup(p.ID); !ok || q.Name != p.Name {
			t.Errorf("Lookup(%s) = %v, %v", p.ID, q.Name, ok)
		}
		if p.Safety == "" || p.Name == "" {
			t.Errorf("%s: no name or safety note", p.ID)
		}
	}
	if _, ok := harness.Lookup("nope"); ok {
		t.Error("Lookup(nope) found something")
	}
	if c, _ := harness.Lookup(harness.Cursor); c.CanRun {
		t.Error("cursor can run")
	}
	zc, _ := harness.Lookup(harness.ZCode)
	for goos, want := range map[string]string{
		"linux":   "/opt/ZCode/resources/glm/zcode.cjs",
		"darwin":  "/Users/ada/Applications/ZCode.app/Contents/Resources/glm/zcode.cjs",
		"windows": `C:\Users\ada\AppData\Local\Programs\ZCode\resources\glm\zcode.cjs`,
	} {
		home := "/Users/ada"
		if goos == "windows" {
			home = `C:\Users\ada`
		}
		locs := strings.Join(zc.KnownLocations(home, goos), "\n")
		if !strings.Contains(locs, want) {
			t.Errorf("%s: zcode locations %q lack %q", goos, locs, want)
		}
	}
}

// Ensure a session id that could pass as an option never reaches a CLI's
// command line, and Claude Code's is one argument (--resume=ID).
func TestBuildRefusesOptionLikeSession(t *testing.T) {
	for _, id := range []string{"--dangerously-skip-permissions", "-x", "a b", "a;b"} {
		for _, p := range []string{harness.ClaudeCode, harness.Codex, harness.Gemini} {
			req := request("linux", p, false, true)
			req.ResumeSession = id
			if _, err := harness.Build(req, "linux"); err == nil {
				t.Errorf("%s: Build resumed %q", p, id)
			}
		}
	}
	spec, err := harness.Build(request("linux", harness.ClaudeCode, false, true), "linux")
	if err != nil || !slices.Contains(spec.Args, "--resume=0199a213-81c0-7800-8aa1-bbab2a035a53") {
		t.Fatalf("Claude Code's resume: %v, %v", spec.Args, err)
	}
}
