package relay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Error codes of a post whose targetSession names no session, or several,
// the recipient can be reached in (resolved when the task is posted).
const (
	// ESessionNotFound: no session of the recipient has that id or exact
	// name; details carry up to five similar names.
	ESessionNotFound = "session_not_found"
	// ESessionAmbiguous: several sessions of the recipient have that exact
	// name; details carry the candidates with their ids.
	ESessionAmbiguous = "session_ambiguous"
)

// FolderWithin reports whether folder (absolute) is one of roots or inside
// one: where an any-session worker may resume a session.
func FolderWithin(folder string, roots []string) bool {
	if folder == "" || !filepath.IsAbs(folder) {
		return false
	}
	for _, root := range roots {
		if root == "" {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(root), filepath.Clean(folder))
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// ErrSessionFolder refuses a session folder an any-session worker may not
// resume in: outside its folders, a symbolic link (or under one), not a
// folder, or not the user's. Its text names no path (it reaches the
// task's sender).
var ErrSessionFolder = errors.New("it ran outside the folders this worker may use")

// RealFolderWithin checks, on the file system, that folder is a real
// folder of this user inside one of roots: every component resolved (a
// folder reached through a symbolic link is refused, so a link inside a
// root cannot lead elsewhere, e.g. to the relay's data folder) and the
// containment checked on the resolved paths of folder and roots. It
// returns the resolved folder, or an error wrapping ErrSessionFolder.
func RealFolderWithin(folder string, roots []string) (string, error) {
	if folder == "" || !filepath.IsAbs(folder) {
		return "", fmt.Errorf("%w (not an absolute folder)", ErrSessionFolder)
	}
	clean := filepath.Clean(folder)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", fmt.Errorf("%w (its folder is gone)", ErrSessionFolder)
	}
	if real != clean {
		return "", fmt.Errorf("%w (its folder is reached through a symbolic link)", ErrSessionFolder)
	}
	info, err := os.Lstat(real)
	if err != nil || !info.IsDir() || !ownedByUser(info) {
		return "", fmt.Errorf("%w (its folder is not a folder of this user)", ErrSessionFolder)
	}
	resolved := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			resolved = append(resolved, rr)
		}
	}
	if !FolderWithin(real, resolved) {
		return "", ErrSessionFolder
	}
	return real, nil
}

// SessionFolders are the folders an any-session worker may resume a
// session from: its working folder, its extra folders and the paths its
// sandbox may read and write.
func (c WorkerConfig) SessionFolders() []string {
	out := append([]string{c.Workdir}, c.ExtraDirs...)
	for _, p := range c.AllowPaths {
		if path, rw := CutAllowPath(p); rw {
			out = append(out, path)
		}
	}
	return out
}
