package desktop

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

type fakeFileManager struct{ items chan []string }

func (f *fakeFileManager) ShowItems(uris []string, startup string) *dbus.Error {
	f.items <- uris
	return nil
}

// Ensure Reveal selects a file through org.freedesktop.FileManager1 when a
// file manager owns that name on the session bus (a fake one here).
func TestRevealFileManager1(t *testing.T) {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") == "" {
		if os.Getenv("CROSSCHAT_REQUIRE_DBUS") != "" {
			t.Fatal("no D-Bus session bus; run under dbus-run-session")
		}
		t.Skip("no D-Bus session bus (make test-desktop runs this under dbus-run-session)")
	}
	file := filepath.Join(t.TempDir(), "a b.png")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if revealNative(file) {
		t.Fatal("revealNative succeeded with no file manager on the bus")
	}
	conn, err := dbus.SessionBusPrivate()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Hello(); err != nil {
		t.Fatal(err)
	}
	fm := &fakeFileManager{items: make(chan []string, 1)}
	if err := conn.Export(fm, "/org/freedesktop/FileManager1", "org.freedesktop.FileManager1"); err != nil {
		t.Fatal(err)
	}
	if r, err := conn.RequestName("org.freedesktop.FileManager1", dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the name: %v %v", r, err)
	}
	if err := Reveal(file); err != nil {
		t.Fatal(err)
	}
	select {
	case uris := <-fm.items:
		if want := "file://" + filepath.ToSlash(filepath.Dir(file)) + "/a%20b.png"; len(uris) != 1 || uris[0] != want {
			t.Fatalf("ShowItems(%v), want [%s]", uris, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ShowItems call")
	}
}

// Ensure Reveal with no file manager on the session bus opens nothing: it
// says where the file is. xdg-open, the only opener Linux has, opens what
// it is given, and a run could swap the file's folder for a .desktop file
// between the check and the opening.
func TestRevealWithoutFileManagerOpensNothing(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "out", "a.png")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, called := t.TempDir(), filepath.Join(dir, "called")
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\necho \"$@\" >> "+called+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus"))
	err := Reveal(file)
	if err == nil || !strings.Contains(err.Error(), filepath.Dir(file)) {
		t.Fatalf("Reveal with no file manager = %v; want where the file is", err)
	}
	if b, err := os.ReadFile(called); err == nil {
		t.Fatalf("xdg-open was run with %q", b)
	}
}
