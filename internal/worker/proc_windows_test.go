//go:build windows

package worker

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A test binary started with CROSSCHAT_TREE_HELPER is a stand-in CLI, not a
// test run: as "parent" it waits for the go file, starts a child (this
// binary again, as "child"), writes the child's pid and waits; a child only
// waits. The test ends both.
func init() {
	role := os.Getenv("CROSSCHAT_TREE_HELPER")
	if role == "" {
		return
	}
	if role == "parent" {
		dir := os.Getenv("CROSSCHAT_TREE_DIR")
		for !exists(filepath.Join(dir, "go")) {
			time.Sleep(10 * time.Millisecond)
		}
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "CROSSCHAT_TREE_HELPER=child")
		if child.Start() != nil {
			os.Exit(3)
		}
		if os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(child.Process.Pid)), 0o600) != nil {
			os.Exit(4)
		}
	}
	time.Sleep(10 * time.Minute)
	os.Exit(5)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestTreeEndsWithItsChildren: a CLI started by a worker is put in a job
// object; ending the tree (kill on a timeout or cancel, release when the run
// ends) ends the CLI and a process it started after it was attached.
func TestTreeEndsWithItsChildren(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(tree)
		killed bool // the CLI ends with an error (TerminateJobObject's exit code 1)
	}{
		{"kill", func(tr tree) { tr.kill(time.Second) }, true},
		{"release closes the job", func(tr tree) { tr.release() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CROSSCHAT_TREE_HELPER=parent", "CROSSCHAT_TREE_DIR="+dir)
			prepare(cmd)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			tr, err := attach(cmd)
			if err != nil {
				_ = cmd.Process.Kill()
				t.Fatalf("attach (job object): %v", err)
			}
			if tr.job == 0 {
				t.Fatal("no job object")
			}
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			child := 0
			deadline := time.Now().Add(30 * time.Second)
			for child == 0 {
				if time.Now().After(deadline) {
					tr.kill(0)
					t.Fatal("the helper never started its child")
				}
				if b, err := os.ReadFile(filepath.Join(dir, "child.pid")); err == nil {
					child, _ = strconv.Atoi(string(bytes.TrimSpace(b)))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !processAlive(cmd.Process.Pid) || !processAlive(child) {
				t.Fatalf("before: parent alive %v, child alive %v", processAlive(cmd.Process.Pid), processAlive(child))
			}
			tc.end(tr)
			select {
			case err := <-waited:
				var exit *exec.ExitError
				if tc.killed && !errors.As(err, &exit) {
					t.Errorf("the CLI's wait: %v, want it killed", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the CLI still runs 30 s after its tree ended")
			}
			deadline = time.Now().Add(30 * time.Second)
			for processAlive(child) {
				if time.Now().After(deadline) {
					taskkill(child)
					t.Fatal("the CLI's child still runs 30 s after its tree ended")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
