package config_test

import (
	"strings"
	"testing"
)

// TestShortEnvAdminTokenRefusedBeyondLoopback ensures a guessable admin
// token from the environment is refused once the relay listens on a
// network address, and still accepted on loopback.
func TestShortEnvAdminTokenRefusedBeyondLoopback(t *testing.T) {
	long := strings.Repeat("k", 32)
	for _, tc := range []struct {
		name    string
		host    string
		token   string
		wantErr bool
	}{
		{"ShortOnNetwork", "0.0.0.0", "hunter2", true},
		{"31OnNetwork", "192.0.2.10", long[:31], true},
		{"32OnNetwork", "0.0.0.0", long, false},
		{"ShortOnLoopback", "127.0.0.1", "hunter2", false},
		{"GeneratedOnNetwork", "0.0.0.0", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"CROSSCHAT_ALLOWED_HOSTS": "relay.example"}
			if tc.token != "" {
				env["CROSSCHAT_API_TOKEN"] = tc.token
			}
			_, err := load(t, mapEnv(env), "--host", tc.host)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "at least 32") {
				t.Fatalf("unclear error: %v", err)
			}
		})
	}
}
