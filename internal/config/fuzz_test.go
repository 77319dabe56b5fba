package config_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// FuzzDotEnv ensures no .env content makes the parser panic, every refusal
// names its line (and never quotes it: it may hold a secret), and every
// accepted key is trimmed, non-empty and on one line.
func FuzzDotEnv(f *testing.F) {
	for _, seed := range []string{
		"CROSSCHAT_PORT=5001\n", "# c\nexport A='b'\nB=\"c\"\r\n", "A=\n", "=x\n", "no equals\n",
		"A='unterminated\n", "export =1\n", "A=b=c\n", "\x00=\x00", "   \n\t\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	lineErr := regexp.MustCompile(`^.+\.env:[0-9]+: expected KEY=VALUE$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.env")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		vals, err := config.ReadDotEnv(path)
		if err != nil {
			if !lineErr.MatchString(err.Error()) {
				t.Fatalf("error does not name just the line: %q", err)
			}
			return
		}
		for k := range vals {
			if k == "" || k != strings.TrimSpace(k) || strings.ContainsAny(k, "\n") {
				t.Fatalf("bad key %q", k)
			}
		}
		if _, err := config.WithDotEnv(func(string) (string, bool) { return "", false }, path); err != nil {
			t.Fatalf("WithDotEnv refused what ReadDotEnv accepted: %v", err)
		}
	})
}
