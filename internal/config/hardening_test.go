package config_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
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

// TestEnvFileArg ensures --env-file is found before parsing in every
// spelling, and nothing after the flags counts.
func TestEnvFileArg(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string
		found bool
	}{
		{[]string{"--env-file", "a.env"}, "a.env", true},
		{[]string{"-env-file=b.env", "--port", "1"}, "b.env", true},
		{[]string{"--port", "1", "--env-file", "c.env"}, "c.env", true},
		{[]string{"--port", "1"}, "", false},
		{[]string{"--host", "::1", "--env-file", "x"}, "x", true},
		{[]string{"--", "--env-file", "x"}, "", false},
		{[]string{"--env-file"}, "", false},
	} {
		got, found := config.EnvFileArg(tc.args)
		if got != tc.want || found != tc.found {
			t.Errorf("EnvFileArg(%q) = %q %v, want %q %v", tc.args, got, found, tc.want, tc.found)
		}
	}
}
