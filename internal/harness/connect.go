package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
		return connectClaude(ctx, env, mcpURL, bearer)
	case Codex:
		return connectCodex(joinPath(goos, home, ".codex", "config.toml"), mcpURL, bearer)
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

func connectClaude(ctx context.Context, env Env, mcpURL, bearer string) (Connection, error) {
	file := joinPath(env.goos(), env.Home, ".claude.json")
	add := []string{"mcp", "add", "--scope", "user", "--transport", "http", UserServer, mcpURL, "--header", "Authorization: " + bearer}
	manual := `claude ` + strings.Join(add[:len(add)-1], " ") + ` "Authorization: ` + bearer + `"`
	bin := Find(ClaudeCode, env)
	if bin == "" {
		return Connection{Message: "Claude Code was not found on this computer: run this command once it is installed.", File: file, Snippet: manual}, nil
	}
	program, pre, err := resolveProgram(bin, env.goos())
	if err != nil {
		return Connection{}, fmt.Errorf("connect Claude Code: %w", err)
	}
	// A server of the same name and scope makes add fail; its absence makes remove fail.
	_, _ = env.run(ctx, program, append(pre, "mcp", "remove", UserServer, "--scope", "user")...)
	if out, err := env.run(ctx, program, append(pre, add...)...); err != nil {
		return Connection{}, fmt.Errorf("connect Claude Code: claude mcp add: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return Connection{Configured: true, File: file,
		Message: `Claude Code now has the MCP server "crosschat" for all your projects (user scope).`}, nil
}

// --- JSON settings ---

// jkv is one member of an ordered JSON object.
type jkv struct {
	Key string
	Val any
}

// jobj is a JSON object that keeps its members' order.
type jobj []jkv

func obj1(k string, v any) jobj { return jobj{{k, v}} }

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func snippet(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v, "")
	return b.String()
}

// editJSON sets path in the JSON object of file to val, keeping every other
// member and their order.
func editJSON(tool, file string, path []string, val jobj) (Connection, error) {
	wanted := any(val)
	for i := len(path) - 1; i >= 0; i-- {
		wanted = jobj{{path[i], wanted}}
	}
	manual := Connection{File: file, Snippet: snippet(wanted),
		Message: fmt.Sprintf("%s isn't plain JSON that can be edited safely (it may have comments), so it was left unchanged: add this to it yourself.", file)}
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return Connection{}, fmt.Errorf("connect %s: %w", tool, err)
	}
	root := jobj{}
	if len(bytes.TrimSpace(old)) > 0 {
		v, err := parseJSON(old)
		if err != nil {
			return manual, nil
		}
		o, ok := v.(jobj)
		if !ok {
			return manual, nil
		}
		root = o
	}
	root, err = setPath(root, path, val)
	if err != nil {
		return manual, nil
	}
	var b bytes.Buffer
	writeJSON(&b, root, "")
	b.WriteByte('\n')
	if err := writeSettings(file, old, b.Bytes()); err != nil {
		return Connection{}, fmt.Errorf("connect %s: %w", tool, err)
	}
	return Connection{Configured: true, File: file,
		Message: fmt.Sprintf(`%s now has the MCP server "crosschat" (%s).`, tool, file)}, nil
}

func setPath(o jobj, path []string, val any) (jobj, error) {
	for i := range o {
		if o[i].Key != path[0] {
			continue
		}
		if len(path) == 1 {
			o[i].Val = val
			return o, nil
		}
		child, ok := o[i].Val.(jobj)
		if !ok {
			return nil, fmt.Errorf("%s is not an object: %w", path[0], errUnsafe)
		}
		child, err := setPath(child, path[1:], val)
		if err != nil {
			return nil, err
		}
		o[i].Val = child
		return o, nil
	}
	if len(path) == 1 {
		return append(o, jkv{path[0], val}), nil
	}
	child, err := setPath(jobj{}, path[1:], val)
	if err != nil {
		return nil, err
	}
	return append(o, jkv{path[0], child}), nil
}

// parseJSON decodes one JSON value, objects as jobj and numbers as json.Number.
func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the JSON value: %w", errUnsafe)
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := jobj{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o = append(o, jkv{k, v})
		}
		_, err := dec.Token()
		return o, err
	case '[':
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return nil, fmt.Errorf("unexpected %v: %w", d, errUnsafe)
}

// writeJSON writes v indented by two spaces.
func writeJSON(b *bytes.Buffer, v any, indent string) {
	switch t := v.(type) {
	case jobj:
		if len(t) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, m := range t {
			b.WriteString(indent + "  ")
			writeScalar(b, m.Key)
			b.WriteString(": ")
			writeJSON(b, m.Val, indent+"  ")
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range t {
			b.WriteString(indent + "  ")
			writeJSON(b, e, indent+"  ")
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		writeScalar(b, t)
	}
}

func writeScalar(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // strings, numbers, booleans and null always encode
	b.Truncate(b.Len() - 1)
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

// --- Codex TOML ---

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

var (
	tomlHeader = regexp.MustCompile(`^\s*(\[\[?)\s*(.*?)\s*(\]\]?)\s*(#.*)?$`)
	tomlBare   = regexp.MustCompile(`^[A-Za-z0-9_-]+`)
)

// ReplaceTOMLTable removes the table named table (a dotted key such as
// mcp_servers.crosschat) and its subtables from text, keeping everything
// else, and appends newTable. It fails, leaving the decision to the caller,
// when text is not TOML it can read or defines the table some other way
// (dotted keys or an inline table).
func ReplaceTOMLTable(text, table, newTable string) (string, error) {
	want := splitKey(table)
	lines := strings.SplitAfter(text, "\n")
	var kept []string
	skipping := false
	current := []string{}
	st := tomlState{}
	for n, line := range lines {
		if line == "" {
			continue
		}
		if st.inString != "" || st.depth > 0 {
			if err := st.scan(line); err != nil {
				return "", fmt.Errorf("line %d: %w", n+1, err)
			}
			if !skipping {
				kept = append(kept, line)
			}
			continue
		}
		trim := strings.TrimSpace(line)
		switch {
		case trim == "" || strings.HasPrefix(trim, "#"):
		case strings.HasPrefix(trim, "["):
			m := tomlHeader.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
			if m == nil || len(m[1]) != len(m[3]) {
				return "", fmt.Errorf("line %d: unreadable table header: %w", n+1, errUnsafe)
			}
			key, rest, err := parseKey(m[2])
			if err != nil || rest != "" {
				return "", fmt.Errorf("line %d: unreadable table name: %w", n+1, errUnsafe)
			}
			current = key
			skipping = hasPrefix(key, want)
		default:
			key, rest, err := parseKey(trim)
			if err != nil || !strings.HasPrefix(rest, "=") {
				return "", fmt.Errorf("line %d: not a key = value line: %w", n+1, errUnsafe)
			}
			if full := append(append([]string{}, current...), key...); !skipping && (hasPrefix(full, want) || hasPrefix(want, full)) {
				return "", fmt.Errorf("line %d: %s is defined outside its own table: %w", n+1, table, errUnsafe)
			}
			if err := st.scan(rest[1:]); err != nil {
				return "", fmt.Errorf("line %d: %w", n+1, err)
			}
		}
		if !skipping {
			kept = append(kept, line)
		}
	}
	if st.inString != "" || st.depth > 0 {
		return "", fmt.Errorf("unterminated value at the end: %w", errUnsafe)
	}
	out := strings.TrimRight(strings.Join(kept, ""), " \t\r\n")
	if out != "" {
		out += "\n\n"
	}
	return out + strings.TrimRight(newTable, "\n") + "\n", nil
}

func hasPrefix(key, prefix []string) bool {
	if len(key) < len(prefix) {
		return false
	}
	for i := range prefix {
		if key[i] != prefix[i] {
			return false
		}
	}
	return true
}

func splitKey(s string) []string {
	k, _, _ := parseKey(s)
	return k
}

// parseKey reads a dotted TOML key (bare or quoted parts) at the start of
// s and returns its parts and the rest of s, trimmed.
func parseKey(s string) ([]string, string, error) {
	var parts []string
	s = strings.TrimSpace(s)
	for {
		switch {
		case strings.HasPrefix(s, `"`):
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", errUnsafe
			}
			var v string
			if err := json.Unmarshal([]byte(s[:end+1]), &v); err != nil {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, v), s[end+1:]
		case strings.HasPrefix(s, "'"):
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, s[1:end+1]), s[end+2:]
		default:
			b := tomlBare.FindString(s)
			if b == "" {
				return nil, "", errUnsafe
			}
			parts, s = append(parts, b), s[len(b):]
		}
		s = strings.TrimSpace(s)
		if !strings.HasPrefix(s, ".") {
			return parts, s, nil
		}
		s = strings.TrimSpace(s[1:])
	}
}

// tomlState follows strings and brackets across the lines of a value.
type tomlState struct {
	inString string // `"""` or `'''` while in a multi-line string
	depth    int
}

func (st *tomlState) scan(s string) error {
	for i := 0; i < len(s); i++ {
		if st.inString != "" {
			if strings.HasPrefix(s[i:], st.inString) {
				i += 2
				st.inString = ""
			} else if st.inString == `"""` && s[i] == '\\' {
				i++
			}
			continue
		}
		switch c := s[i]; c {
		case '#':
			return nil
		case '[', '{':
			st.depth++
		case ']', '}':
			st.depth--
			if st.depth < 0 {
				return fmt.Errorf("unbalanced brackets: %w", errUnsafe)
			}
		case '"', '\'':
			q := string([]byte{c, c, c})
			if strings.HasPrefix(s[i:], q) {
				st.inString = q
				i += 2
				continue
			}
			j := i + 1
			for j < len(s) && s[j] != c && s[j] != '\n' {
				if c == '"' && s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) || s[j] != c {
				return fmt.Errorf("unterminated string: %w", errUnsafe)
			}
			i = j
		}
	}
	return nil
}
