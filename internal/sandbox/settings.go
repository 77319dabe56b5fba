package sandbox

import (
	"io"
	"os"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// SettingsFilter gives what a confined run of a preset gets of one of the
// user's settings files (by its base name): data without what a run must
// not read (the relay's MCP server entries with the agent's token, which
// the one-step Connect writes there for the user's chats), and whether it
// left anything out; server is the run's own MCP server name
// (runspec.SandboxRequest's Server), for a copy that must name it. The app
// passes internal/harness's RunSettings.
type SettingsFilter func(preset, server, name string, data []byte) (out []byte, changed bool)

// maxSettings bounds a settings file read to be given as a copy; a larger
// one is not given to the run at all (it could hold a credential).
const maxSettings = 16 << 20

// readSettings reads the regular file p (following links: the user's
// own), when it is one of at most maxSettings bytes.
func readSettings(p string) ([]byte, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSettings {
		return nil, false
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSettings))
	return data, err == nil
}

// runSettings is what a run gets of its CLI's settings file name: as the
// filter gives it, with every relay credential left (an agent or run
// token, an invite code, wherever it is in the file: an env block, a
// header of a server the filter kept) replaced by "[hidden]", so no copy
// the sandbox makes holds one, whatever the filter knows of the format.
func (s homeSetup) runSettings(name string, data []byte) []byte {
	out := data
	if s.settings != nil {
		out, _ = s.settings(s.preset, s.server, name, data)
	}
	return []byte(relay.RedactSecrets(string(out)))
}
