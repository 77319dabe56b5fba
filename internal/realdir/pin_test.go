package realdir_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/realdir"
)

// Ensure a pin follows every link, also above a path that does not exist
// yet (a folder under /home → /var/home made after the save keeps its
// pin), and that Moved refuses a path swapped for a link, or reached
// through a link put above it, since it was pinned, naming it.
func TestPinAndMoved(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, elsewhere := filepath.Join(tmp, "var", "home"), filepath.Join(tmp, "secret")
	for _, d := range []string{filepath.Join(real, "proj", "sub"), elsewhere} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(tmp, "home")
	if err := os.Symlink(real, home); err != nil {
		t.Fatal(err)
	}
	later := filepath.Join(home, "proj", "cache")
	pins := map[string]string{}
	for _, p := range []string{filepath.Join(home, "proj"), filepath.Join(home, "proj", "sub"), later} {
		pins[p] = realdir.Pin(p)
	}
	if want := filepath.Join(real, "proj", "cache"); pins[later] != want {
		t.Fatalf("pin of a path made later: %s, want %s", pins[later], want)
	}
	if err := os.Mkdir(filepath.Join(real, "proj", "cache"), 0o700); err != nil {
		t.Fatal(err)
	}
	for p, pin := range pins {
		if now, err := realdir.Moved("The folder", p, pin); err != nil || now != pin {
			t.Errorf("%s unchanged: %s, %v", p, now, err)
		}
	}
	// A run swaps the sub folder for a link.
	sub := filepath.Join(home, "proj", "sub")
	if err := os.Rename(filepath.Join(real, "proj", "sub"), filepath.Join(real, "proj", "sub.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(real, "proj", "sub")); err != nil {
		t.Fatal(err)
	}
	_, err = realdir.Moved("The working folder", sub, pins[sub])
	var moved *realdir.MovedError
	if !errors.As(err, &moved) || moved.Now != elsewhere || moved.Path != sub {
		t.Fatalf("a folder swapped for a link: %v", err)
	}
	// Unpinned (saved by an older version): accepted where it leads.
	if now, err := realdir.Moved("The working folder", sub, ""); err != nil || now != elsewhere {
		t.Fatalf("unpinned: %s, %v", now, err)
	}
}
