//go:build unix

package worker

import (
	"os/exec"
	"testing"
)

// Ensure crash recovery without /proc (macOS) can tell a leftover CLI from
// an unrelated process that got its pid and has the same name: ps gives a
// start time, stable for one process and absent once it is gone, and the
// process file records it.
func TestLeftoverMatchWithoutProcfsUsesStartTime(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps here")
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	start := psStart(pid)
	if start == "" || psStart(pid) != start {
		t.Fatalf("start of a running process: %q", start)
	}
	if !processMatches(pid, "sleep") {
		t.Fatal("the running sleep does not match its name")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got := psStart(pid); got != "" {
		t.Fatalf("a gone process still has a start time: %q", got)
	}
	if psStart(0) != "" || psStart(-1) != "" {
		t.Fatal("no pid, no start time")
	}
}
