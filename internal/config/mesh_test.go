package config_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// Ensure the mesh's trust mode defaults to approval, takes account from
// the flag or the environment, refuses anything else, and that the
// embedded server is open only when asked.
func TestMeshTrustAndEmbedOpen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		trust string
		open  bool
		fails bool
	}{
		{"defaults", nil, nil, config.TrustApproval, false, false},
		{"flag", nil, []string{"--mesh-trust", "account", "--nats-embed-open"}, config.TrustAccount, true, false},
		{"environment", map[string]string{config.EnvMeshTrust: "account", config.EnvNATSEmbedOpen: "1"}, nil, config.TrustAccount, true, false},
		{"flag over environment", map[string]string{config.EnvMeshTrust: "account"}, []string{"--mesh-trust", "approval"}, config.TrustApproval, false, false},
		{"unknown mode", nil, []string{"--mesh-trust", "everyone"}, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, mapEnv(tc.env), tc.args...)
			if tc.fails {
				if err == nil {
					t.Fatalf("accepted %v", tc.args)
				}
				return
			}
			if err != nil || c.Mesh.Trust != tc.trust || c.Mesh.EmbedOpen != tc.open {
				t.Fatalf("trust %q open %v, %v; want %q %v", c.Mesh.Trust, c.Mesh.EmbedOpen, err, tc.trust, tc.open)
			}
		})
	}
}

// Ensure strict mode is off by default and set by the flag or the
// environment, the flag winning.
func TestMeshStrict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		args   []string
		strict bool
	}{
		{"default", nil, nil, false},
		{"flag", nil, []string{"--nats-strict"}, true},
		{"environment", map[string]string{config.EnvNATSStrict: "1"}, nil, true},
		{"environment true", map[string]string{config.EnvNATSStrict: "true"}, nil, true},
		{"environment other", map[string]string{config.EnvNATSStrict: "yes please"}, nil, false},
		{"flag over environment", map[string]string{config.EnvNATSStrict: "1"}, []string{"--nats-strict=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := load(t, mapEnv(tc.env), tc.args...)
			if err != nil || c.Mesh.Strict != tc.strict {
				t.Fatalf("strict %v, %v; want %v", c.Mesh.Strict, err, tc.strict)
			}
		})
	}
}
