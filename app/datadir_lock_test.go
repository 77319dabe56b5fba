package app_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/filelock"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// serveHelperEnv names the data folder, and serveHelperPortEnv the port,
// of the `serve` a helper process of TestKilledRelayFreesDataDir runs.
const (
	serveHelperEnv     = "CCR_APP_SERVE_HELPER"
	serveHelperPortEnv = "CCR_APP_SERVE_HELPER_PORT"
)

// TestServeHelper runs `serve` on the data folder and port its environment
// names, until it is killed.
func TestServeHelper(t *testing.T) {
	dir := os.Getenv(serveHelperEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	os.Exit(app.Serve([]string{"--port", os.Getenv(serveHelperPortEnv), "--data-dir", dir, "--log-file", "none"}, nil, "test", os.Stdout, os.Stderr))
}

// inUse is the error of a start on dir while the relay of pid at url serves it.
func inUse(pid int, url, dir string) string {
	return fmt.Sprintf("another relay (pid %d, %s) is already serving the data folder %s: stop it first or choose another --data-dir", pid, url, dir)
}

// Ensure a second relay on a data folder that a relay serves fails to
// start (Start, and serve with exit code 1) naming the first one, as does
// an upstream import into it, and leaves the first one's run file alone;
// once the first stops, it starts.
func TestSecondRelayOnDataDirRefused(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	first := apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
	want := inUse(os.Getpid(), first.Config().BaseURL(), dir)

	if r, err := app.Start(apptest.Config(dir), app.StartOptions{Version: "test"}); err == nil {
		apptest.Stop(t, r)
		t.Fatal("a second relay started on a data folder the first serves")
	} else if err.Error() != want || !errors.Is(err, app.ErrAlreadyRunning) {
		t.Fatalf("second start: %v\nwant: %s", err, want)
	}
	var out, errb testkit.Buffer
	if code := app.Serve([]string{"--port", strconv.Itoa(testkit.FreePort(t)), "--data-dir", dir}, nil, "test", &out, &errb); code != 1 ||
		errb.String() != "crosschat-relay serve: "+want+"\n" {
		t.Fatalf("second serve: exit %d\n%s", code, errb.String())
	}
	// Said on its terminal, not in the log of the relay that serves the folder.
	if b, _ := os.ReadFile(app.LogPath(apptest.Config(dir))); strings.Contains(string(b), "already serving") {
		t.Fatalf("the refused serve wrote into the running relay's log:\n%s", b)
	}
	if _, err := app.ImportUpstream(upstreamFixture, filepath.Join(dir, "relay.db"), ""); err == nil || err.Error() != want {
		t.Fatalf("import into the served folder: %v\nwant: %s", err, want)
	}
	if o, _, code := run(t, "status", "--data-dir", dir); code != 0 || !strings.Contains(o, first.Config().BaseURL()) {
		t.Fatalf("status after the refused starts: %d %q", code, o)
	}

	apptest.Stop(t, first)
	apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
}

// Ensure a relay killed with SIGKILL (a real process) leaves no lock
// behind: while it runs a start here is refused naming its pid and
// address; once it is killed, a start succeeds, nothing cleaned up.
func TestKilledRelayFreesDataDir(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	port := testkit.FreePort(t)
	var out testkit.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelper$")
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+dir, serveHelperPortEnv+"="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	noErr(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var info app.RunInfo
	poll.Until(t, "the child relay's run file", 60*time.Second, func() bool {
		i, ok, err := app.ReadRunFile(dir)
		info = i
		return err == nil && ok && i.PID == cmd.Process.Pid
	}, out.String)

	want := inUse(cmd.Process.Pid, info.URL, dir)
	if r, err := app.Start(apptest.Config(dir), app.StartOptions{Version: "test"}); err == nil {
		apptest.Stop(t, r)
		t.Fatal("a relay started on a data folder another process serves")
	} else if err.Error() != want {
		t.Fatalf("start beside the child: %v\nwant: %s", err, want)
	}

	noErr(t, cmd.Process.Kill())
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, app.RunFileName)); err != nil {
		t.Fatalf("the killed relay's run file is gone: %v", err)
	}
	// Linux and macOS free a dead process's locks as it ends; Windows may
	// take a moment.
	var r *app.Relay
	var err error
	poll.Until(t, "a start after the kill", 20*time.Second, func() bool {
		r, err = app.Start(apptest.Config(dir), app.StartOptions{Version: "test"})
		return err == nil
	}, func() string { return err.Error() })
	t.Cleanup(func() { apptest.Stop(t, r) })
	if i, ok, err := app.ReadRunFile(dir); err != nil || !ok || i.PID != os.Getpid() || i.URL != r.Config().BaseURL() {
		t.Fatalf("run file after the restart: %+v %v %v", i, ok, err)
	}
}

// Ensure a start does not lose to a look at its data folder's lock: a
// start refused on the port takes the lock for a moment to learn who holds
// the port (portHolder), which may fall between the other start's listen
// and its lock. The relay waits that moment out and starts.
func TestStartWaitsOutABriefLockLook(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	noErr(t, os.MkdirAll(dir, 0o700))
	l, err := filelock.Lock(filepath.Join(dir, "crosschat-relay.lock"))
	noErr(t, err)
	released := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond) // the look, held longer than it is
		l.Unlock()
		close(released)
	}()
	apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
	<-released
}
