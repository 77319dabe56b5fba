package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// VersionTimeout bounds `<bin> --version` during detection.
const VersionTimeout = 2 * time.Second

// Env is the computer detection and Connect look at. SystemEnv returns the
// real one; tests use temporary folders and fake programs.
type Env struct {
	// PATH is the program search path, in the list format of GOOS.
	PATH string
	// Home is the user's home folder.
	Home string
	// ClaudeDir is Claude Code's folder when CLAUDE_CONFIG_DIR moves it
	// (its settings file .claude.json and its transcripts are there); empty
	// means the default (~/.claude.json, ~/.claude).
	ClaudeDir string
	// CodexDir is Codex's folder when CODEX_HOME moves it; empty means
	// ~/.codex.
	CodexDir string
	// GOOS decides executable extensions, separators and known locations.
	GOOS string
	// LookPath, when set, replaces the search of PATH for a program name.
	LookPath func(name string) (string, error)
	// Run runs a program and returns its combined output; nil runs it for real.
	Run func(ctx context.Context, program string, args ...string) ([]byte, error)
}

// SystemEnv returns the environment of this process.
func SystemEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{PATH: os.Getenv("PATH"), Home: home, GOOS: runtime.GOOS,
		ClaudeDir: os.Getenv("CLAUDE_CONFIG_DIR"), CodexDir: os.Getenv("CODEX_HOME")}
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

func (e Env) run(ctx context.Context, program string, args ...string) ([]byte, error) {
	if e.Run != nil {
		return e.Run(ctx, program, args...)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	return out.Bytes(), err
}

// Detected is a preset as found on this computer.
type Detected struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Path is the program found, "" when it is not installed.
	Path string `json:"path,omitempty"`
	// Version is the first line of `<path> --version`, "" when unknown.
	Version string `json:"version,omitempty"`
	// Tested tells where Version lies against TestedRange: VersionTested,
	// VersionNewer, VersionOlder, or "" when unknown.
	Tested string `json:"tested,omitempty"`
	// TestedRange is the span of versions the relay's tests run ("2.1.197–2.1.332"),
	// "" for presets no test runs.
	TestedRange string `json:"testedRange,omitempty"`
	CanRun      bool   `json:"canRun"`
	ExtraDirs   bool   `json:"extraDirs"`
	Safety      string `json:"safety,omitempty"`
	Note        string `json:"note,omitempty"`
}

// Detect looks for every preset: on PATH first (on Windows with the
// extensions .exe, .cmd, .bat and none, in that order), then in its known
// locations. It reads each found program's version with a short timeout;
// a version that can't be read never fails detection. Custom is listed too,
// without a path.
func Detect(ctx context.Context, env Env) []Detected {
	presets := Presets()
	out := make([]Detected, len(presets))
	var wg sync.WaitGroup
	for i, p := range presets {
		d := Detected{ID: p.ID, Name: p.Name, CanRun: p.CanRun, ExtraDirs: p.ExtraDirs, Safety: p.Safety}
		if p.ID != Custom {
			d.Path = find(p, env)
		}
		d.Note = note(p, env, d.Path)
		if r, ok := Tested(p.ID); ok {
			d.TestedRange = r.String()
		}
		out[i] = d
		if d.Path != "" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i].Version = version(ctx, env, d.Path)
				out[i].Tested = CheckVersion(p.ID, out[i].Version)
			}()
		}
	}
	wg.Wait()
	return out
}

// Find returns the program of preset id on this computer, "" if not found.
func Find(id string, env Env) string {
	p, ok := Lookup(id)
	if !ok {
		return ""
	}
	return find(p, env)
}

func find(p Preset, env Env) string {
	goos := env.goos()
	for _, bin := range p.Binaries {
		if env.LookPath != nil {
			if path, err := env.LookPath(bin); err == nil && path != "" {
				return path
			}
			continue
		}
		if path := searchPath(env.PATH, bin, goos); path != "" {
			return path
		}
	}
	if p.KnownLocations != nil {
		for _, loc := range p.KnownLocations(env.Home, goos) {
			if isProgram(loc, goos) {
				return loc
			}
		}
	}
	return ""
}

func searchPath(pathList, bin, goos string) string {
	sep, exts := ":", []string{""}
	if goos == "windows" {
		sep, exts = ";", []string{".exe", ".cmd", ".bat", ""}
	}
	for _, dir := range strings.Split(pathList, sep) {
		dir = strings.Trim(dir, `"`)
		// A relative entry ("", ".", "bin") would find a program in
		// whatever folder the relay was started from, a cloned repository
		// say: skip it, as exec.LookPath does.
		if dir == "" || !absDir(dir, goos) {
			continue
		}
		for _, ext := range exts {
			if p := filepath.Join(dir, bin+ext); isProgram(p, goos) {
				return p
			}
		}
	}
	return ""
}

// absDir reports whether dir is an absolute folder, on this computer or
// (for goos windows) in Windows' own form: C:\x, C:/x or \\server\share.
func absDir(dir, goos string) bool {
	if filepath.IsAbs(dir) {
		return true
	}
	if goos != "windows" {
		return false
	}
	if strings.HasPrefix(dir, `\\`) || strings.HasPrefix(dir, "//") {
		return true
	}
	return len(dir) >= 3 && dir[1] == ':' && (dir[2] == '\\' || dir[2] == '/') &&
		(dir[0] >= 'A' && dir[0] <= 'Z' || dir[0] >= 'a' && dir[0] <= 'z')
}

// isProgram reports whether path is a file that can be started: any file
// on Windows, a script anywhere, else a file with an executable bit.
func isProgram(path, goos string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return false
	}
	return goos == "windows" || isScript(path) || fi.Mode()&0o111 != 0
}

func version(ctx context.Context, env Env, path string) string {
	ctx, cancel := context.WithTimeout(ctx, VersionTimeout)
	defer cancel()
	program, pre, err := resolveProgram(path, env.goos())
	if err != nil {
		return ""
	}
	out, err := env.run(ctx, program, append(pre, "--version")...)
	if err != nil || ctx.Err() != nil {
		return ""
	}
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "WARNING:") {
			return clip(line, 100)
		}
	}
	return ""
}

func note(p Preset, env Env, path string) string {
	goos := env.goos()
	switch p.ID {
	case Codex:
		if path != "" && strings.Contains(filepath.ToSlash(path), "/.codex/.sandbox-bin/") {
			return "This is the copy bundled with the Codex desktop app, which lacks some helper programs; installing the Codex CLI (npm install -g @openai/codex) is more reliable."
		}
	case ZCode:
		if path != "" {
			if _, err := os.Stat(joinPath(goos, env.Home, ".zcode", "cli", "config.json")); err != nil {
				return "Start ZCode once and sign in, so that ~/.zcode/cli/config.json exists."
			}
		}
	case Cursor:
		return "Cursor can use the relay in its chats, but it can't run tasks unattended."
	case Custom:
		return fmt.Sprintf("Any program that takes a task on standard input, in a file or as its last argument; placeholders: %s.",
			"{prompt_file}, {result_file}, {mcp_config}, {mcp_url}, {workdir}")
	}
	return ""
}
