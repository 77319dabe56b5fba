package realdir

import (
	"fmt"
	"os"
	"path/filepath"
)

// Pin is where path leads now: made absolute and clean, with every
// symbolic link in it followed; where the path does not exist (yet), its
// longest existing part is followed and the rest kept as named. A worker's
// folders and allowed paths are pinned when the worker is saved (what the
// operator chose), and each run checks that they still lead there
// (Moved): a run that may write a folder could otherwise swap a path
// another run is given for a link to anywhere (~/.ssh, the relay's data
// folder), which every later run would be given instead.
func Pin(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(p) == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// MovedError says a path leads elsewhere than where it was pinned.
type MovedError struct {
	// What names the path for the user ("the working folder").
	What string
	// Path is the path as configured; Pinned where it led when pinned;
	// Now where it leads now.
	Path, Pinned, Now string
}

func (e *MovedError) Error() string {
	how := "leads to " + e.Now
	if fi, err := os.Lstat(e.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		how = "is now a symbolic link to " + e.Now
	}
	return fmt.Sprintf("%s %s %s, not to %s as when the worker was saved (a link was put in its place or above it, which a run "+
		"that may write there can do), so this run was not started. Remove the link; or, if you moved it yourself, save the "+
		"worker again to accept where it leads now.", e.What, e.Path, how, e.Pinned)
}

// Moved checks that path, named what, still leads where it was pinned
// (pinned, a Pin result; "" when it never was, which accepts where it
// leads now) and returns where it leads, or a *MovedError.
func Moved(what, path, pinned string) (string, error) {
	now := Pin(path)
	if pinned != "" && now != filepath.Clean(pinned) {
		return now, &MovedError{What: what, Path: filepath.Clean(path), Pinned: pinned, Now: now}
	}
	return now, nil
}
