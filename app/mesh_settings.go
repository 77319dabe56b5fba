package app

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Where the running relay's mesh configuration came from.
const (
	MeshFromFlags    = "flags"    // --nats… flags or CROSSCHAT_NATS* variables
	MeshFromSettings = "settings" // the settings saved in the window
	MeshFromNone     = "none"     // not in a mesh
)

// meshSettingsStore keeps the window's mesh settings (internal/store).
type meshSettingsStore interface {
	MeshSettings(ctx context.Context) (relay.MeshSettings, error)
	SetMeshSettings(ctx context.Context, s relay.MeshSettings) error
}

// MeshSettingsView is the Settings page's mesh section: the saved settings
// and where the running relay's mesh configuration came from.
type MeshSettingsView struct {
	Saved relay.MeshSettings `json:"saved"`
	// Source is flags, settings or none (see MeshFrom…).
	Source string `json:"source"`
	// Applied is false when the saved settings differ from those the relay
	// started with: they apply at the next start.
	Applied bool `json:"applied"`
	// Error says why the saved settings did not join a mesh at start.
	Error string `json:"error,omitempty"`
}

// meshFromSettings fills cfg.Mesh from the saved settings when neither
// flags nor the environment name a mesh.
func meshFromSettings(ctx context.Context, cfg config.Config, st meshSettingsStore) (config.Config, relay.MeshSettings, error) {
	if cfg.Mesh.Enabled() {
		return cfg, relay.MeshSettings{}, nil
	}
	s, err := st.MeshSettings(ctx)
	if err != nil || !s.Enabled() {
		return cfg, s, err
	}
	if err := checkMeshSettings(s); err != nil { // saved by an older version, or edited by hand
		return cfg, s, fmt.Errorf("saved mesh settings: %w", err)
	}
	cfg.Mesh.URLs, cfg.Mesh.Creds, cfg.Mesh.NKey, cfg.Mesh.TLSCA = s.URLs, s.Creds, s.NKey, s.TLSCA
	cfg.Mesh.Embed, cfg.Mesh.Name = s.Embed, s.Name
	cfg.Mesh.Strict = cfg.Mesh.Strict || s.Strict
	return cfg, s, nil
}

// normalizeMeshSettings trims the fields and drops empty URLs.
func normalizeMeshSettings(s relay.MeshSettings) relay.MeshSettings {
	urls := []string{}
	for _, u := range s.URLs {
		for _, p := range strings.Split(u, ",") {
			if p = strings.TrimSpace(p); p != "" {
				urls = append(urls, p)
			}
		}
	}
	s.URLs = urls
	s.Creds, s.NKey, s.TLSCA = strings.TrimSpace(s.Creds), strings.TrimSpace(s.NKey), strings.TrimSpace(s.TLSCA)
	s.Embed, s.Name = strings.TrimSpace(s.Embed), strings.TrimSpace(s.Name)
	return s
}

// checkMeshSettings refuses what would fail at start: a URL that is not
// NATS, a relative file path, an embed address that is not HOST:PORT.
func checkMeshSettings(s relay.MeshSettings) error {
	bad := func(format string, a ...any) error { return relay.Errorf(relay.EInvalidRequest, format, a...) }
	if len(s.URLs) > 16 {
		return bad("urls: at most 16 NATS servers.")
	}
	for _, raw := range s.URLs {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || !slices.Contains([]string{"nats", "tls", "ws", "wss"}, u.Scheme) {
			return bad("urls: %q is not a NATS server URL (nats://host:4222, tls://…, ws://…, wss://…).", raw)
		}
		if u.User != nil {
			return bad("urls: %q carries a user or password; use a credentials or NKey file instead.", u.Redacted())
		}
	}
	for _, f := range []struct{ name, path string }{{"creds", s.Creds}, {"nkey", s.NKey}, {"tlsCa", s.TLSCA}} {
		if f.path != "" && !filepath.IsAbs(f.path) {
			return bad("%s: %q is not an absolute path.", f.name, f.path)
		}
		if len(f.path) > 4096 {
			return bad("%s: the path is too long.", f.name)
		}
	}
	if s.Embed != "" {
		host, port, err := net.SplitHostPort(s.Embed)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return bad("embed: %q is not HOST:PORT (e.g. 127.0.0.1:4222).", s.Embed)
		}
	}
	if len(s.Name) > 100 {
		return bad("name: at most 100 characters.")
	}
	return nil
}

// settingsStore returns the settings store, the mesh's origin and the app
// context once the relay has started.
func (m *Mesh) settingsStore() (meshSettingsStore, meshOrigin, context.Context, error) {
	_, ctx, err := m.c.get()
	if err != nil {
		return nil, meshOrigin{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settings == nil {
		return nil, meshOrigin{}, nil, errNotStarted
	}
	return m.settings, m.origin, ctx, nil
}

// MeshSettings returns the mesh settings saved in the window, and where the
// running relay's mesh configuration came from.
func (m *Mesh) MeshSettings() (MeshSettingsView, error) {
	st, origin, ctx, err := m.settingsStore()
	if err != nil {
		return MeshSettingsView{}, err
	}
	saved, err := st.MeshSettings(ctx)
	if err != nil {
		return MeshSettingsView{}, err
	}
	return origin.view(saved), nil
}

// SaveMeshSettings checks and saves the mesh settings; they apply the next
// time the relay starts, unless flags or CROSSCHAT_NATS* variables name a
// mesh (those win). This computer only: it names files on it.
func (m *Mesh) SaveMeshSettings(s relay.MeshSettings) (MeshSettingsView, error) {
	s = normalizeMeshSettings(s)
	if err := checkMeshSettings(s); err != nil {
		return MeshSettingsView{}, err
	}
	st, origin, ctx, err := m.settingsStore()
	if err != nil {
		return MeshSettingsView{}, err
	}
	if err := st.SetMeshSettings(ctx, s); err != nil {
		return MeshSettingsView{}, err
	}
	return origin.view(s), nil
}

// view is the Settings page's mesh section for the saved settings.
func (o meshOrigin) view(saved relay.MeshSettings) MeshSettingsView {
	if saved.URLs == nil {
		saved.URLs = []string{}
	}
	same := fmt.Sprint(saved) == fmt.Sprint(o.saved)
	// A restart would change nothing: flags win, the relay started with
	// these settings, or none name a mesh and the relay is in none.
	applied := o.source == MeshFromFlags || same || !saved.Enabled() && o.source == MeshFromNone
	return MeshSettingsView{Saved: saved, Source: o.source, Applied: applied, Error: o.err}
}

// meshOrigin is where the running relay's mesh configuration came from,
// and the saved settings it started with.
type meshOrigin struct {
	source string // MeshFrom…
	saved  relay.MeshSettings
	err    string // why the saved settings did not join a mesh
}

// setSettings records the settings store and the mesh's origin.
func (m *Mesh) setSettings(st meshSettingsStore, o meshOrigin) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settings, m.origin = st, o
}
