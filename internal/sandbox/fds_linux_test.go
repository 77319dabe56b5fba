package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure the sandbox child passes the CLI only standard input, output and
// error: started with a descriptor open on a file its rules refuse (as a
// relay started `serve 3<secret` passes it on), the confined CLI can
// neither read through descriptor 3 nor find it open, while its `cat` of
// the file by path is refused as before.
func TestSandboxedRunInheritsOnlyStdio(t *testing.T) {
	self := landlockSelf(t)
	home, data, work, run, _ := layout(t)
	secret := filepath.Join(home, "secret.txt")
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	req := runspec.SandboxRequest{
		Config:  relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: "/bin/sh", Args: []string{"-c", `if (cat <&3) 2>/dev/null; then echo "fd3 open"; else echo "fd3 closed"; fi
if cat "$SECRET" 2>/dev/null; then echo "path read"; else echo "path refused"; fi`},
		Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin", "SECRET=" + secret}, Workdir: work, RunDir: run,
	}
	s, err := sandbox.Wrapper{Self: self, Protected: []string{data}}.Wrap(req)
	if err != nil || !s.Confined {
		t.Fatalf("wrap: %+v, %v", s, err)
	}
	cmd := exec.Command(s.Program, s.Args...)
	cmd.Env, cmd.Dir, cmd.ExtraFiles = req.Env, work, []*os.File{f}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := string(out); !strings.Contains(got, "fd3 closed") || !strings.Contains(got, "path refused") || strings.Contains(got, "ssh key") {
		t.Fatalf("the confined run read an inherited descriptor: %s", got)
	}
}
