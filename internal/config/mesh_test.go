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
