package harness

import (
	"bytes"
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// The one-step Connect writes the agent's token into the user's own
// settings of its CLI (~/.claude.json, ~/.codex/config.toml,
// ~/.gemini/settings.json), where the user's chats use it. A worker run
// must not read it: with it a run acts as the whole agent (read_updates,
// a post_task outside its task's conversation), beyond the run, until the
// token is rotated. So what a confined run's CLI home gets of those files
// is a copy made by RunSettings, never the file itself: the relay's server
// entries are left out, with any other server whose entry holds a relay
// credential; a run reaches the relay only through its own configuration
// (--mcp-config with --strict-mcp-config, Codex's -c, Gemini's system
// settings with --allowed-mcp-server-names).
//
// Gemini CLI reads a system settings file only when root owns it and every
// folder above it, and none of them is writable by group or others: a run
// folder in a user's data folder never is. So a confined Gemini run's copy
// of settings.json also carries the run's own server (geminiRunServer),
// made even when the user has no settings file, under the run's own name
// (runspec.Request's Server): the working folder's .gemini/settings.json
// outranks this copy, and an entry of a name it could know would replace
// the run's server.

// credential matches a relay credential anywhere: an agent or run token or
// an invite code.
var credential = regexp.MustCompile(`(?:cca|ccr|cci)_[A-Za-z0-9_-]{20,}`)

// RunSettings returns what a worker run of preset gets of the user's
// settings file name (its base name): data without the relay's MCP server
// entries (named UserServer, or holding a relay credential) in every
// mcpServers object of a JSON file at any depth (Claude Code's projects
// keep their own), and, for Codex's config.toml, without any MCP server at
// all (Codex has no flag to ignore them; the run's own comes from its -c
// options). changed is false when nothing was left out, and the file may be
// given as it is. A file it cannot read as JSON or TOML is returned as it is
// (the sandbox hides any credential left in what it copies all the same).
//
// For Gemini's settings.json the copy also holds the run's own server,
// named server ("" for runspec.RunServer), which names the run's URL and
// token by environment variable: changed is then true, and data may be
// empty (the user has no such file).
func RunSettings(preset, server, name string, data []byte) (out []byte, changed bool) {
	switch {
	case preset == Gemini && name == "settings.json":
		return geminiRunSettings(data, cmp.Or(server, runspec.RunServer))
	case preset == Codex && name == "config.toml":
		text, err := ReplaceTOMLTable(string(data), "mcp_servers", "")
		if err != nil || strings.TrimSpace(text) == strings.TrimSpace(string(data)) {
			return data, false
		}
		return []byte(text), true
	case strings.HasSuffix(name, ".json"):
		if !credential.Match(data) && !bytes.Contains(data, []byte(`"`+UserServer+`"`)) {
			return data, false
		}
		v, err := parseJSON(data)
		if err != nil {
			return data, false
		}
		v, changed = withoutRelayServers(v, false)
		if !changed {
			return data, false
		}
		return settingsFile(v), true
	}
	return data, false
}

// withoutRelayServers drops, in every mcpServers object of v (servers:
// inside one), the members named UserServer or holding a relay credential.
func withoutRelayServers(v any, servers bool) (any, bool) {
	changed := false
	switch t := v.(type) {
	case jobj:
		kept := t[:0:0]
		for _, m := range t {
			if servers && (m.Key == UserServer || holdsCredential(m.Val)) {
				changed = true
				continue
			}
			val, c := withoutRelayServers(m.Val, m.Key == "mcpServers")
			changed = changed || c
			kept = append(kept, jkv{m.Key, val})
		}
		return kept, changed
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			var c bool
			out[i], c = withoutRelayServers(e, false)
			changed = changed || c
		}
		return out, changed
	}
	return v, false
}

// holdsCredential reports whether a JSON value holds a relay credential in
// any of its strings (keys included).
func holdsCredential(v any) bool {
	switch t := v.(type) {
	case string:
		return credential.MatchString(t)
	case jobj:
		for _, m := range t {
			if credential.MatchString(m.Key) || holdsCredential(m.Val) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if holdsCredential(e) {
				return true
			}
		}
	}
	return false
}

// geminiRunServer is the run's own server as Gemini's settings name it:
// the URL and the token are the run's environment variables, never written
// to disk, and the server is trusted (headless Gemini refuses the tools of
// one that is not).
var geminiRunServer = jobj{
	{"httpUrl", "${CROSSCHAT_MCP_URL}"},
	{"headers", obj1("Authorization", "Bearer ${CROSSCHAT_TOKEN}")},
	{"trust", true},
}

// geminiRunSettings is a Gemini run's settings.json: the user's (data,
// possibly empty) read as Gemini reads it (comments allowed, a repeated
// key's last value), without the relay's servers and comments, with the
// run's own (named server) added; an mcpServers that is not an object
// (which gives Gemini no server) becomes one holding only it. A file that
// is not a JSON object is returned as it is (Gemini refuses it too), and
// the run has the relay's tools only from the run folder's settings, which
// Gemini reads only as root.
func geminiRunSettings(data []byte, server string) ([]byte, bool) {
	o, ok := parseObject(withoutComments(data))
	if !ok {
		return data, false
	}
	v, _ := withoutRelayServers(o, false)
	root := v.(jobj)
	var servers jobj
	if i := slices.IndexFunc(root, func(m jkv) bool { return m.Key == "mcpServers" }); i >= 0 {
		servers, _ = root[i].Val.(jobj)
	}
	servers, _ = setPath(servers, []string{server}, geminiRunServer) // one key: no error
	root, _ = setPath(root, []string{"mcpServers"}, servers)
	return settingsFile(root), true
}
