package procstat_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/procstat"
)

// Ensure a stat line is read field by field, a command name holding
// parentheses and spaces included, and a short or broken one is refused.
func TestRead(t *testing.T) {
	tests := []struct {
		name, line string
		want       procstat.Stat
		ok         bool
	}{
		{"plain", "42 (sh) S 7 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0",
			procstat.Stat{PID: 42, PPID: 7, PGID: 42, State: 'S', Start: 123456}, true},
		{"name with ) and spaces", "42 (a) b (c) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0",
			procstat.Stat{PID: 42, PPID: 1, PGID: 9, State: 'Z', Start: 99}, true},
		{"too short", "42 (sh) S 7 42", procstat.Stat{}, false},
		{"no name", "42 sh S 7 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0", procstat.Stat{}, false},
		{"start not a number", "42 (sh) S 7 42 42 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 x 0 0", procstat.Stat{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "42"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "42", "stat"), []byte(tc.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, ok := procstat.Read(dir, 42)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Read = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if ok && got.Zombie() != (tc.want.State == 'Z') {
				t.Fatalf("Zombie() = %v for state %c", got.Zombie(), got.State)
			}
		})
	}
	if _, ok := procstat.Read(t.TempDir(), 42); ok {
		t.Fatal("a missing process was read")
	}
}
