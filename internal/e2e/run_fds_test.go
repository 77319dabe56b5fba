//go:build linux

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a worker run inherits only standard input, output and error: the
// real binary started as `serve 3<secret 9<secret` (descriptors a shell or
// a service manager left open) runs a worker whose program reads
// descriptors 3 and 9 and lists what it holds, sandboxed and not; neither
// run reads the secret through them (before, both did, while the
// sandboxed one's `cat` of the file itself was refused).
func TestRunInheritsOnlyStdio(t *testing.T) {
	u := newUserRelay(t)
	secret := filepath.Join(u.home, ".ssh", "id_ed25519")
	u.write(t, secret, "KEY-MATERIAL-9f3a\n", 0o600)
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u.start(t, f, nil, nil, nil, nil, nil, f) // descriptors 3 and 9
	boss := u.agent(t, "boss")
	u.agent(t, "builder")
	work := filepath.Join(u.home, "projects", "app")
	u.write(t, filepath.Join(work, "README.md"), "app\n", 0o644)
	script := u.script(t, "fds.sh", `for n in 3 9; do
  if (cat <&$n) 2>/dev/null; then echo "fd$n: open"; else echo "fd$n: closed"; fi
done
if cat "$HOME/.ssh/id_ed25519" 2>/dev/null; then echo "file: read"; else echo "file: refused"; fi
echo "fds: $(ls /proc/self/fd | tr '\n' ' ')"
`)
	modes := []string{"off"}
	if sandbox.ABI() >= 1 {
		modes = append(modes, "on")
	}
	for _, mode := range modes {
		u.must(t, "workers", "set", "builder", "--harness", "custom", "--command", script, "--workdir", work,
			"--allow-sender", "boss", "--timeout", "2m", "--sandbox", mode)
		task, text := u.task(t, boss, "builder", "descriptors, sandbox "+mode)
		t.Logf("sandbox %s: %s: %s", mode, task.Status, text)
		if strings.Contains(text, "KEY-MATERIAL") && !strings.Contains(text, "file: read") || strings.Contains(text, "fd3: open") ||
			strings.Contains(text, "fd9: open") {
			t.Errorf("sandbox %s: the run read an inherited descriptor: %s", mode, text)
		}
		if !strings.Contains(text, "fd9: closed") || !strings.Contains(text, "fd3: closed") {
			t.Errorf("sandbox %s: the program did not run as expected: %s", mode, text)
		}
		if mode == "on" && !strings.Contains(text, "file: refused") {
			t.Errorf("sandboxed: the key file itself was readable: %s", text)
		}
	}
}
