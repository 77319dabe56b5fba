package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ensure a cleanup that cannot list the processes (no /proc, or one that
// does not show this process) says so at once, instead of waiting and then
// reporting processes that "did not end after SIGKILL" though none was
// sent.
func TestCleanupWithoutProc(t *testing.T) {
	defer func(d string) { procDir = d }(procDir)
	procDir = filepath.Join(t.TempDir(), "no-proc")
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
	}()
	var said strings.Builder
	r := &reaper{self: os.Getpid(), cli: -1, stderr: &said}
	r.cleanup()
	if got := said.String(); !strings.Contains(got, "cannot be listed") || strings.Contains(got, "SIGKILL") {
		t.Fatalf("said %q", got)
	}
}
