//go:build unix

package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
)

// A FIFO planted at the run file's path blocked every reader of it for
// ever: a second start on the port (its port-taken message reads the run
// file), status, quit and the verbs that find the relay by it. It is
// refused at once as no regular file, and the start says the port is taken.
func TestRunFileFIFORefused(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	first := apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
	run := filepath.Join(dir, app.RunFileName)
	if err := os.Remove(run); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(run, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		_, _, err := app.ReadRunFile(dir)
		done <- err
		cfg := apptest.Config(dir)
		cfg.Port = first.Config().Port
		r, err := app.Start(cfg, app.StartOptions{Version: "test"})
		if err == nil {
			apptest.Stop(t, r)
		}
		done <- err
	}()
	for _, want := range []error{app.ErrNotRegular, app.ErrPortTaken} {
		select {
		case err := <-done:
			if !errors.Is(err, want) {
				t.Fatalf("got %v, want %v", err, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("still waiting on the FIFO after 30 s, for %v", want)
		}
	}
}

// A FIFO at the name the run file was once written through (run.json.tmp)
// hung the start for good, holding the port and the data folder's lock: the
// run file is written through a new file of its own name, and the start
// goes on.
func TestRunFileWrittenBesideAPlantedFIFO(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, app.RunFileName+".tmp"), 0o600); err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() {
		r, err := app.Start(apptest.Config(dir), app.StartOptions{Version: "test"})
		if err == nil {
			apptest.Stop(t, r)
		}
		started <- err
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the start still waits on the FIFO after 30 s")
	}
}

// Ensure a file a run made is read as the file at its path, never what a
// later run planted there: a link (to a picture outside the run's folder)
// and a FIFO (which blocked the preview, and the dashboard's call, for
// ever) are refused at once; a regular file is read, up to the limit.
func TestReadSmallFileRefusesPlantedFiles(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "private.png")
	if err := os.WriteFile(outside, []byte("\x89PNG\r\n\x1a\nsecret"), 0o600); err != nil {
		t.Fatal(err)
	}
	file, link, fifo := filepath.Join(dir, "out.png"), filepath.Join(dir, "pic.png"), filepath.Join(dir, "pipe.png")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want error
		read string
	}{{file, nil, "01234"}, {link, app.ErrLink, ""}, {fifo, app.ErrNotRegular, ""}, {dir, app.ErrNotRegular, ""}} {
		done := make(chan struct{})
		var (
			b   []byte
			err error
		)
		go func() { b, err = app.ReadSmallFile(tc.path, 5); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still reading after 30 s", tc.path)
		}
		if tc.want == nil && (err != nil || string(b) != tc.read) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: read %q, %v; want %q, %v", tc.path, b, err, tc.read, tc.want)
		}
	}
}
