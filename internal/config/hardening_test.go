package config_test

import (
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// TestShortEnvAdminTokenRefusedBeyondLoopback ensures a guessable admin
// token from the environment is refused: shorter than 24 characters on any
// address, shorter than 32 once the relay listens on a network address.
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
		{"ShortOnLoopback", "127.0.0.1", "hunter2", true},
		{"23OnLoopback", "127.0.0.1", long[:23], true},
		{"24OnLoopback", "127.0.0.1", long[:24], false},
		{"24OnNetwork", "0.0.0.0", long[:24], true},
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
			want := "at least 32"
			if loopbackHost(tc.host) || len(tc.token) < 24 {
				want = "at least 24"
			}
			if err != nil && !strings.Contains(err.Error(), want) {
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

// loopbackHost reports whether host is one of the loopback hosts of these tests.
func loopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}
