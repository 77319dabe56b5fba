package testkit

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
	"time"
)

// StartHelper starts this test binary again, running only the test named
// test (a helper process) with env added to its environment, and waits up
// to 20 s for its first line of output to be ready (the helper saying it
// holds what the test needs). The process is killed when the test ends, if
// the test has not ended it first.
func StartHelper(t testing.TB, test string, env []string, ready string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != ready+"\n" {
			t.Fatalf("the helper %s said %q, want %q", test, line, ready)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the helper %s did not say %q within 20 s", test, ready)
	}
	return cmd
}
