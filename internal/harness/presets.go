package harness

import (
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// Preset ids.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Gemini     = "gemini"
	OpenCode   = "opencode"
	ZCode      = "zcode"
	Codewhale  = "codewhale"
	Cursor     = "cursor"
	Custom     = relay.HarnessCustom
)

// UserServer is the MCP server name of the relay's tools in a tool's own
// settings and in presets that configure the server on the command line
// (a run's own configuration uses runspec.RunServer).
const UserServer = "crosschat"

// Preset describes one agent CLI the relay knows how to detect, run and connect.
type Preset struct {
	ID   string
	Name string
	// Binaries are the program names searched on PATH, in order.
	Binaries []string
	// KnownLocations lists further places the program is installed to,
	// for a home directory and a GOOS.
	KnownLocations func(home, goos string) []string
	// CanRun tells whether a worker can run it headless (Cursor cannot).
	CanRun bool
	// ExtraDirs tells whether the CLI accepts extra folders besides the workdir.
	ExtraDirs bool
	// Resume tells whether the CLI can resume its own earlier session.
	Resume bool
	// Events is the stream format of its output (relay.Events*), "" if it cannot run.
	Events string
	// RelayServer is the MCP server name of the relay's tools in a run, "" for none.
	RelayServer string
	// Safety is a one-line note on what the CLI may do unattended.
	Safety string
}

func fixed(paths ...string) func(home, goos string) []string {
	return func(home, goos string) []string {
		out := make([]string, 0, len(paths))
		for _, p := range paths {
			out = append(out, joinPath(goos, home, p))
		}
		return out
	}
}

// Presets returns every known preset, in display order, custom last.
func Presets() []Preset {
	return []Preset{
		{
			ID: ClaudeCode, Name: "Claude Code", Binaries: []string{"claude"},
			KnownLocations: func(home, goos string) []string {
				exe := ""
				if goos == "windows" {
					exe = ".exe"
				}
				return []string{
					joinPath(goos, home, ".local", "bin", "claude"+exe),
					joinPath(goos, home, ".claude", "local", "claude"),
				}
			},
			CanRun: true, ExtraDirs: true, Resume: true,
			Events: runspec.EventsClaudeStream, RelayServer: runspec.RunServer,
			Safety: "Claude Code may edit files inside the working folder; anything that needs approval (such as shell commands) is refused.",
		},
		{
			ID: Codex, Name: "Codex", Binaries: []string{"codex"},
			KnownLocations: func(home, goos string) []string {
				exe := ""
				if goos == "windows" {
					exe = ".exe"
				}
				return []string{joinPath(goos, home, ".codex", ".sandbox-bin", "codex"+exe)}
			},
			CanRun: true, ExtraDirs: true, Resume: true,
			Events: runspec.EventsCodexJSON, RelayServer: UserServer,
			Safety: "Codex may change files in the working folder and the extra folders only: in the worker sandbox (on by default), or else in its own workspace-write sandbox.",
		},
		{
			ID: Gemini, Name: "Gemini CLI", Binaries: []string{"gemini"},
			KnownLocations: func(home, goos string) []string { return nil },
			CanRun:         true, ExtraDirs: true, Resume: true,
			Events: runspec.EventsGeminiStream, RelayServer: runspec.RunServer,
			Safety: "Gemini CLI runs with approval mode auto_edit: it may edit files; other actions that need approval are refused. The relay's own tools are trusted for the run.",
		},
		{
			ID: OpenCode, Name: "OpenCode", Binaries: []string{"opencode"},
			KnownLocations: func(home, goos string) []string { return nil },
			CanRun:         true, Events: runspec.EventsPlain,
			Safety: "OpenCode follows its own permission settings.",
		},
		{
			ID: ZCode, Name: "ZCode", Binaries: []string{"zcode"},
			KnownLocations: zcodeLocations,
			CanRun:         true, Events: runspec.EventsPlain,
			Safety: "ZCode runs in edit mode instead of its default yolo mode.",
		},
		{
			ID: Codewhale, Name: "Codewhale (DeepSeek)", Binaries: []string{"codewhale", "codew", "deepseek"},
			KnownLocations: fixed(".cargo/bin/codewhale", ".local/bin/codewhale"),
			CanRun:         true, Events: runspec.EventsPlain, RelayServer: UserServer,
			Safety: "Codewhale approves its own actions inside the workspace-write sandbox (which is not enforced on Windows).",
		},
		{
			ID: Cursor, Name: "Cursor", Binaries: []string{"cursor"},
			KnownLocations: func(home, goos string) []string { return nil },
			Safety:         "Cursor can only be connected; it cannot run tasks unattended.",
		},
		{
			ID: Custom, Name: "Other command-line agent",
			KnownLocations: func(home, goos string) []string { return nil },
			CanRun:         true, ExtraDirs: true, Events: runspec.EventsPlain,
			Safety: "A custom program runs with the rights of the relay's user unless the worker's sandbox is on.",
		},
	}
}

func zcodeLocations(home, goos string) []string {
	const rel = "ZCode/resources/glm/zcode.cjs"
	switch goos {
	case "windows":
		return []string{
			joinPath(goos, `C:\Program Files`, rel),
			joinPath(goos, home, "AppData", "Local", "Programs", rel),
		}
	case "darwin":
		return []string{
			"/Applications/ZCode.app/Contents/Resources/glm/zcode.cjs",
			joinPath(goos, home, "Applications/ZCode.app/Contents/Resources/glm/zcode.cjs"),
		}
	default:
		return []string{"/opt/ZCode/resources/glm/zcode.cjs"}
	}
}

// Lookup returns the preset with id.
func Lookup(id string) (Preset, bool) {
	for _, p := range Presets() {
		if p.ID == id {
			return p, true
		}
	}
	return Preset{}, false
}

// joinPath joins path elements with the separator of goos, whatever the
// system the relay runs on (so Windows commands can be built and tested
// anywhere). Elements may themselves contain either separator.
func joinPath(goos string, elem ...string) string {
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	var parts []string
	for i, e := range elem {
		if e == "" {
			continue
		}
		if goos == "windows" {
			e = strings.ReplaceAll(e, "/", `\`)
		}
		if i > 0 {
			e = strings.TrimLeft(e, `/\`)
		}
		if i < len(elem)-1 {
			e = strings.TrimRight(e, `/\`)
		}
		parts = append(parts, e)
	}
	return strings.Join(parts, sep)
}
