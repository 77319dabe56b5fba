package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Ensure a session file of a Gemini worker's CLI home that is a hard link
// to a file outside the home (one the run could write, linked into its
// chats) is not kept for the next run, which might no longer be allowed
// that file; the file itself is left as it was. Keeping every regular file
// its pattern names, the link stays in the next run's home, so the test
// can fail.
func TestCLIHomeHardLinkNotKept(t *testing.T) {
	w, req, own := geminiHome(t)
	secret := filepath.Join(filepath.Dir(req.Workdir), "repoA", "secret.env")
	writeTestFile(t, secret, "TOKEN=1")
	const link = ".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl"
	if err := os.MkdirAll(filepath.Dir(filepath.Join(own, link)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(own, link)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(own, link)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hard link to %s is still in the next run's home: %v", secret, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "TOKEN=1" {
		t.Errorf("the linked file changed: %q, %v", b, err)
	}
}

// Ensure a Gemini worker's CLI home keeps only the session files Gemini
// CLI writes (session-*.jsonl, session-*.json), each of at most 64 MiB,
// the newest 500 of a project's chats: another name, a bigger file and the
// oldest past 500 are gone in the next run's home. Keeping every file in
// chats, each of those stays, so the test can fail.
func TestCLIHomeKeptFilesBounded(t *testing.T) {
	w, req, own := geminiHome(t)
	chats := filepath.Join(own, ".gemini", "tmp", "mine", "chats")
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var kept []string
	for i := range 500 {
		name := fmt.Sprintf("session-2026-12-03T00-00-%08d.jsonl", i)
		writeTestFile(t, filepath.Join(chats, name), "transcript")
		mtime := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(chats, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			kept = append(kept, name)
		}
	}
	writeTestFile(t, filepath.Join(chats, "session-old.json"), "transcript")
	kept = append(kept, "session-old.json")
	if err := os.Chtimes(filepath.Join(chats, "session-old.json"), base.Add(time.Hour), base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	gone := []string{"session-2026-12-03T00-00-00000000.jsonl", "notes.md", "session-x.sh", "session-big.jsonl"}
	writeTestFile(t, filepath.Join(chats, "notes.md"), "planted")
	writeTestFile(t, filepath.Join(chats, "session-x.sh"), "planted")
	big, err := os.Create(filepath.Join(chats, "session-big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: its size, not its blocks, counts.
	if err := errors.Join(big.Truncate(64<<20+1), big.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(chats, "session-big.jsonl"), base.Add(2*time.Hour), base.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	for _, name := range gone {
		if _, err := os.Lstat(filepath.Join(chats, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the next run's home: %v", name, err)
		}
	}
	missing := 0
	for _, name := range kept {
		if b, err := os.ReadFile(filepath.Join(chats, name)); err != nil || string(b) != "transcript" {
			missing++
		}
	}
	if ents, err := os.ReadDir(chats); err != nil || len(ents) != 500 || missing > 0 {
		t.Errorf("the next run's chats hold %d files (%v), %d of the newest 500 missing; want those 500", len(ents), err, missing)
	}
}

// Ensure a process left from a run that writes its CLI home nonstop (here,
// through a descriptor of the home, as a leftover confined to that folder
// does) writes nothing the next run finds in its home: the next run's home
// is a new folder. Clearing the home in place, what the leftover writes
// after the clearing is in the next run's home, so the test can fail.
func TestCLIHomeLeftoverWriterKeptOut(t *testing.T) {
	w, req, own := geminiHome(t)
	fd, err := unix.Open(own, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		// Writes until told to stop, and once after.
		for i := 0; ; i++ {
			f, err := unix.Openat(fd, fmt.Sprintf("leftover-%d", i), unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
			if err != nil {
				done <- err
				return
			}
			unix.Close(f)
			select {
			case <-stop:
				f, err := unix.Openat(fd, "leftover-last", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
				if err == nil {
					unix.Close(f)
				}
				done <- err
				return
			default:
			}
		}
	}()
	// Let it write before the next run is prepared.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(own, "leftover-100")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leftover wrote nothing")
		}
		time.Sleep(time.Millisecond)
	}
	_, werr := w.Wrap(req)
	close(stop)
	// ENOENT: its folder was removed, as the last home.
	if err := <-done; err != nil && err != unix.ENOENT {
		t.Fatalf("the leftover: %v", err)
	}
	if werr != nil {
		t.Fatalf("next wrap: %v", werr)
	}
	ents, err := os.ReadDir(own)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "leftover-") {
			t.Fatalf("what the leftover wrote (%s) is in the next run's home", e.Name())
		}
	}
}

// Ensure what the removal of a worker's last CLI homes left in its folder
// of homes (homes moved aside, folders a removal moved up) is removed
// before the next run, not only when the worker goes. Removing only the
// homes moved aside, the folders moved up stay, so the test can fail.
func TestCLIHomeLeftFoldersRemoved(t *testing.T) {
	w, req, own := geminiHome(t)
	homes := filepath.Dir(own)
	for _, rel := range []string{".crosschat-old-gemini-1-1/x/evil.sh", ".crosschat-deep-1-1/d/evil.sh"} {
		writeTestFile(t, filepath.Join(homes, rel), "planted")
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	ents, err := os.ReadDir(homes)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "gemini" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the worker's homes hold %v, want only gemini", names)
	}
}
