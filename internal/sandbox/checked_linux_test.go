package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a folder the worker checked (its working folder, an allowed
// path) and a process then swapped for a link before the sandbox was set
// up is not followed: the run is refused, or runs without reaching where
// the link leads. Before, the sandbox resolved the paths again after the
// worker's check, so the rules followed a link put there in between (by a
// process of another worker's run that may write the folder holding it,
// while this run's check, its folders' snapshot and its CLI home's
// preparation took their time): the run got read-write on ~/.ssh.
func TestCheckedPathSwappedBeforeWrap(t *testing.T) {
	self := landlockSelf(t)
	for _, swapped := range []string{"working folder", "allowed path"} {
		t.Run(swapped, func(t *testing.T) {
			home, data, work, run, _ := layout(t)
			ssh := filepath.Join(home, ".ssh")
			writeTestFile(t, filepath.Join(ssh, "id_ed25519"), "the user's key")
			sub, cache := filepath.Join(work, "sub"), filepath.Join(work, "cache")
			for _, d := range []string{sub, cache} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn, AllowPaths: []string{cache + ":rw"}},
				Program: "/bin/sh", Args: []string{"-c", try + `try read-key cat "$SSH/id_ed25519"; try write-key sh -c 'echo x >> "$SSH/authorized_keys"'`},
				Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SSH=" + ssh}, Workdir: sub, RunDir: run,
				Resolved: map[string]string{cache: cache},
			}
			// What a process of another run does after this run's check.
			victim := map[string]string{"working folder": sub, "allowed path": cache}[swapped]
			if err := os.Rename(victim, victim+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(ssh, victim); err != nil {
				t.Fatal(err)
			}
			s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
			if err != nil {
				t.Logf("refused at the wrap: %v", err)
				return
			}
			cmd := exec.Command(s.Program, s.Args...)
			cmd.Env, cmd.Dir = req.Env, work
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if strings.Contains(string(out), " ok") || !errors.As(err, &exit) || exit.ExitCode() != 126 ||
				!strings.Contains(string(out), victim+" is a symbolic link now") {
				t.Errorf("the run with a checked path swapped for a link to ~/.ssh: %v\n%s\n(rules: %s)", err, out, s.Log)
			}
		})
	}
}
