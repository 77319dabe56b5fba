package plantguard

import (
	"path/filepath"
	"strings"
)

// Runs of workers whose folders overlap (one worker's working folder
// inside another's, or the same) may run at once. A snapshot taken while
// another run is under way would record what that run planted as the
// folder's own, and restore it after its own run, when the other run's
// restore had undone it. So a snapshot taken while an older one is still
// to be restored inherits, where their folders overlap, what the older
// one kept: the state before either run.

// Folder is the folder the snapshot was taken of.
func (s *Snapshot) Folder() string { return s.folder }

// Inherit replaces what s kept, where its folder and older's overlap
// (older's folder is, holds or lies inside s's), by what older kept
// there; the roots s found there that older did not keep (what a run
// under way planted) stay roots, kept as absent. An older snapshot
// checked only in part (past maxWalked entries) is not taken: its
// absence of an entry says nothing.
func (s *Snapshot) Inherit(older *Snapshot) {
	if older == nil || older.partial {
		return
	}
	var toS func(k string) string // an older key as a key of s
	var inRegion func(k string) bool
	if p, ok := relInside(older.folder, s.folder); ok {
		// s's folder is older's or lies inside it: all of s.
		inRegion = func(string) bool { return true }
		toS = func(k string) string {
			switch {
			case p == ".":
				return k
			case strings.HasPrefix(k, p+"/"):
				return k[len(p)+1:]
			}
			return ""
		}
	} else if p, ok := relInside(s.folder, older.folder); ok {
		// older's folder lies inside s's: the part under it.
		inRegion = func(k string) bool { return k == p || strings.HasPrefix(k, p+"/") }
		toS = func(k string) string { return join(p, k) }
	} else {
		return
	}
	for k := range s.entries {
		if inRegion(k) {
			delete(s.entries, k)
		}
	}
	for k := range s.gitDirs {
		if inRegion(k) {
			delete(s.gitDirs, k)
		}
	}
	for k, e := range older.entries {
		if t := toS(k); t != "" && t != "." {
			s.entries[t] = e
		}
	}
	for k := range older.gitDirs {
		if t := toS(k); t != "" {
			s.gitDirs[t] = true
		}
	}
	for _, r := range older.roots {
		t := toS(r)
		if t == "" || t == "." {
			continue
		}
		if _, ok := s.deep[t]; !ok {
			s.roots = append(s.roots, t)
		}
		s.deep[t] = older.deep[r]
	}
}

// relInside is path's slash path relative to dir when path is dir (".")
// or lies inside it.
func relInside(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
