package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Connection tells what Connect did to a tool's own settings.
type Connection struct {
	// Configured is true when the tool's settings now name the relay.
	Configured bool `json:"configured"`
	// Message says what was done, or what the user should do.
	Message string `json:"message"`
	// File is the settings file written or meant, "" when not a file.
	File string `json:"file,omitempty"`
	// Snippet is what to add by hand when not configured.
	Snippet string `json:"snippet,omitempty"`
}

// errUnsafe marks settings that Connect leaves alone because it can't edit
// them safely (comments in JSON, TOML it can't read, conflicting entries).
var errUnsafe = errors.New("not safe to edit")

// Connect adds the relay's MCP server (named "crosschat", at mcpURL with
// the agent's bearer token) to the user-level settings of preset presetID,
// so the tool's own chats can use the relay. A settings file is backed up
// to <file>.bak before it is changed and written owner-only. A file that
// can't be edited safely is left untouched: the result is then not
// Configured and carries a Snippet to add by hand. Errors are failures to
// run the tool or to write its settings.
func Connect(ctx context.Context, presetID string, env Env, mcpURL, token string) (Connection, error) {
	goos := env.goos()
	home := env.Home
	bearer := "Bearer " + token
	headers := obj1("Authorization", bearer)
	generic := jobj{{"mcpServers", jobj{{UserServer, jobj{{"url", mcpURL}, {"headers", headers}}}}}}
	switch presetID {
	case ClaudeCode:
		return connectClaude(env, mcpURL, headers)
	case Codex:
		dir := env.CodexDir
		if dir == "" {
			dir = joinPath(goos, home, ".codex")
		}
		return connectCodex(joinPath(goos, dir, "config.toml"), mcpURL, bearer)
	case Gemini:
		return editJSON("Gemini CLI", joinPath(goos, home, ".gemini", "settings.json"),
			[]string{"mcpServers", UserServer}, jobj{{"httpUrl", mcpURL}, {"headers", headers}})
	case ZCode:
		return editJSON("ZCode", joinPath(goos, home, ".zcode", "cli", "config.json"),
			[]string{"mcp", "servers", UserServer}, jobj{{"type", "http"}, {"url", mcpURL}, {"headers", headers}})
	case Codewhale:
		dir := joinPath(goos, home, ".codewhale")
		if !isDir(dir) && isDir(joinPath(goos, home, ".deepseek")) {
			dir = joinPath(goos, home, ".deepseek")
		}
		return editJSON("Codewhale", joinPath(goos, dir, "mcp.json"),
			[]string{"servers", UserServer}, jobj{{"url", mcpURL}, {"headers", headers}})
	case Cursor:
		return editJSON("Cursor", joinPath(goos, home, ".cursor", "mcp.json"),
			[]string{"mcpServers", UserServer}, jobj{{"url", mcpURL}, {"headers", headers}})
	case OpenCode:
		file := joinPath(goos, home, ".config", "opencode", "opencode.json")
		return Connection{
			Message: "OpenCode's settings are not edited automatically: add this to " + file + ".",
			File:    file,
			Snippet: snippet(jobj{{"mcp", jobj{{UserServer, jobj{{"type", "remote"}, {"url", mcpURL}, {"oauth", false}, {"enabled", true}, {"headers", headers}}}}}}),
		}, nil
	case Custom:
		return Connection{Message: "Add the relay to your program's MCP settings yourself.", Snippet: snippet(generic)}, nil
	}
	return Connection{}, fmt.Errorf("connect %q: unknown harness", presetID)
}

// connectClaude writes the user-scope server into ~/.claude.json itself
// (into .claude.json in CLAUDE_CONFIG_DIR when that moves Claude Code's
// folder), as `claude mcp add --scope user` would. Running that command would put
// the token on a command line, where every user of the computer can read
// it (ps, /proc); the file is written owner-only instead.
func connectClaude(env Env, mcpURL string, headers jobj) (Connection, error) {
	dir := env.ClaudeDir
	if dir == "" {
		dir = env.Home
	}
	file := joinPath(env.goos(), dir, ".claude.json")
	c, err := editJSON("Claude Code", file, []string{"mcpServers", UserServer},
		jobj{{"type", "http"}, {"url", mcpURL}, {"headers", headers}})
	if err == nil && c.Configured {
		c.Message = `Claude Code now has the MCP server "crosschat" for all your projects (user scope, in ` + file + `).`
	}
	return c, err
}

// writeSettings backs old up to file.bak (when there was a file) and
// replaces file with data, owner-only.
func writeSettings(file string, old, data []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if old != nil {
		if err := os.WriteFile(file+".bak", old, 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", file, err)
		}
		if err := os.Chmod(file+".bak", 0o600); err != nil {
			return fmt.Errorf("back up %s: %w", file, err)
		}
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// connectCodex writes the crosschat table into Codex's config.toml (see toml.go).
func connectCodex(file, mcpURL, bearer string) (Connection, error) {
	table := "[mcp_servers." + UserServer + "]\n" +
		"url = " + tomlString(mcpURL) + "\n" +
		"http_headers = { Authorization = " + tomlString(bearer) + " }\n" +
		`default_tools_approval_mode = "approve"` + "\n"
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Connection{}, fmt.Errorf("connect Codex: %w", err)
	}
	text, err := ReplaceTOMLTable(string(old), "mcp_servers."+UserServer, table)
	if err != nil {
		return Connection{File: file, Snippet: table,
			Message: fmt.Sprintf("%s couldn't be edited safely (%v), so it was left unchanged: add this table to it yourself.", file, err)}, nil
	}
	if err := writeSettings(file, old, []byte(text)); err != nil {
		return Connection{}, fmt.Errorf("connect Codex: %w", err)
	}
	return Connection{Configured: true, File: file,
		Message: fmt.Sprintf(`Codex now has the MCP server "crosschat" (%s).`, file)}, nil
}
