// Package realdir checks folders on the file system: that a folder a
// transcript names is a real folder of this user inside the folders an
// any-session worker may use, with every symbolic link resolved. It
// imports only the standard library.
package realdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Inside reports whether folder (absolute) is one of roots or inside
// one: where an any-session worker may resume a session.
func Inside(folder string, roots []string) bool {
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

// ErrOutside refuses a folder an any-session worker may not resume a
// session in: outside its folders, a symbolic link (or under one), not a
// folder, or not the user's. Its text names no path (it reaches the
// task's sender).
var ErrOutside = errors.New("it ran outside the folders this worker may use")

// Within checks, on the file system, that folder is a real
// folder of this user inside one of roots: every component resolved (a
// folder reached through a symbolic link is refused, so a link inside a
// root cannot lead elsewhere, e.g. to the relay's data folder) and the
// containment checked on the resolved paths of folder and roots. It
// returns the resolved folder, or an error wrapping ErrOutside.
func Within(folder string, roots []string) (string, error) {
	return within(folder, resolveRoots(roots))
}

// Keep is Within as a filter over many folders checked against the same
// roots (the sessions of a lookup, many of them in one folder): the roots
// are resolved once and each folder is checked once.
func Keep(roots []string) func(folder string) bool {
	resolved := resolveRoots(roots)
	seen := map[string]bool{}
	return func(folder string) bool {
		ok, done := seen[folder]
		if !done {
			_, err := within(folder, resolved)
			ok = err == nil
			seen[folder] = ok
		}
		return ok
	}
}

// resolveRoots is roots with their symbolic links resolved; a root that is
// not absolute or cannot be resolved is left out.
func resolveRoots(roots []string) []string {
	resolved := make([]string, 0, len(roots))
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			resolved = append(resolved, rr)
		}
	}
	return resolved
}

// within is Within against roots resolved already.
func within(folder string, resolved []string) (string, error) {
	if folder == "" || !filepath.IsAbs(folder) {
		return "", fmt.Errorf("%w (not an absolute folder)", ErrOutside)
	}
	clean := filepath.Clean(folder)
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return "", fmt.Errorf("%w (its folder is gone)", ErrOutside)
	}
	if real != clean {
		return "", fmt.Errorf("%w (its folder is reached through a symbolic link)", ErrOutside)
	}
	info, err := os.Lstat(real)
	if err != nil || !info.IsDir() || !ownedByUser(info) {
		return "", fmt.Errorf("%w (its folder is not a folder of this user)", ErrOutside)
	}
	if !Inside(real, resolved) {
		return "", ErrOutside
	}
	return real, nil
}
