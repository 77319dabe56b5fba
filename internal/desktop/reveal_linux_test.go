package desktop

import (
	"os"
	"path/filepath"
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
