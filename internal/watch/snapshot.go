// Package watch tracks the files a worker run adds, changes and deletes in
// its working and extra folders.
//
// Two sources are combined so nothing is missed: a before/after Snapshot of
// the folders (path → size and modification time), compared by Diff, and a
// Watcher that records the paths fsnotify reports while the run works. A
// snapshot is bounded in file count and time; when one hits its limits the
// watcher's paths fill the gap (see Changes).
//
// Folders named in Ignored (.git, node_modules, …) are skipped, and symbolic
// links are neither followed nor recorded: only regular files count.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Defaults for Limits.
const (
	DefaultMaxFiles = 50000
	DefaultMaxTime  = 5 * time.Second
	// MaxChanges caps the list Diff and Changes return.
	MaxChanges = 500
)

// Ignored are directory names never walked or watched: version control,
// dependency and build caches that change wholesale and say nothing about
// what a run made.
var Ignored = map[string]bool{
	".git":         true,
	".hg":          true,
	".svn":         true,
	"node_modules": true,
	".venv":        true,
	"venv":         true,
	"__pycache__":  true,
	".cache":       true,
	".next":        true,
	".turbo":       true,
	".gradle":      true,
	"target":       true,
}

// Limits bound a snapshot (and the watcher's set-up walk). Zero fields take
// the defaults.
type Limits struct {
	// MaxFiles is how many files a snapshot records before it stops.
	MaxFiles int
	// MaxTime is how long a snapshot may walk.
	MaxTime time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxTime <= 0 {
		l.MaxTime = DefaultMaxTime
	}
	return l
}

// FileInfo is what a snapshot records of one regular file.
type FileInfo struct {
	Size    int64
	ModTime time.Time
}

// Snap is the state of some folders at one moment.
type Snap struct {
	// Files maps absolute, cleaned paths to their size and time.
	Files map[string]FileInfo
	// Complete is false when the walk stopped at a limit, was cancelled or
	// could not read a folder: files missing from it may still exist.
	Complete bool
}

// Snapshot walks dirs (depth first, without following symbolic links) and
// records every regular file, skipping Ignored folder names. It stops at
// limits.MaxFiles files or after limits.MaxTime and then returns an
// incomplete snapshot without an error. A folder that does not exist is
// empty; one that cannot be read makes the snapshot incomplete. A cancelled
// ctx returns what was recorded so far, marked incomplete, with ctx's error.
func Snapshot(ctx context.Context, dirs []string, limits Limits) (Snap, error) {
	limits = limits.withDefaults()
	deadline := time.Now().Add(limits.MaxTime)
	snap := Snap{Files: make(map[string]FileInfo), Complete: true}
	var stack []string
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return snap, fmt.Errorf("snapshot %s: %w", d, err)
		}
		fi, err := os.Lstat(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return snap, fmt.Errorf("snapshot %s: %w", d, err)
		}
		if !fi.IsDir() {
			return snap, fmt.Errorf("snapshot %s: not a folder", d)
		}
		stack = append(stack, abs)
	}
	visited := 0
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if err := ctx.Err(); err != nil {
			snap.Complete = false
			return snap, err
		}
		if time.Now().After(deadline) {
			snap.Complete = false
			return snap, nil
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				// Unreadable: its files are unknown, so no deletions may be inferred.
				snap.Complete = false
			}
			continue
		}
		for _, e := range entries {
			name := e.Name()
			p := filepath.Join(dir, name)
			switch t := e.Type(); {
			case t&fs.ModeSymlink != 0:
				continue
			case t.IsDir():
				if !Ignored[name] {
					stack = append(stack, p)
				}
				continue
			case !t.IsRegular():
				continue
			}
			if len(snap.Files) >= limits.MaxFiles {
				snap.Complete = false
				return snap, nil
			}
			info, err := e.Info()
			if err != nil {
				// Removed between listing and stat: it is simply not there.
				continue
			}
			snap.Files[p] = FileInfo{Size: info.Size(), ModTime: info.ModTime()}
			visited++
			if visited%1024 == 0 && time.Now().After(deadline) {
				snap.Complete = false
				return snap, nil
			}
		}
	}
	return snap, nil
}

// change is a ChangedFile with the time it is sorted by.
type change struct {
	relay.ChangedFile
	at time.Time
}

func sortAndCap(cs []change) []relay.ChangedFile {
	sort.Slice(cs, func(i, j int) bool {
		if !cs[i].at.Equal(cs[j].at) {
			return cs[i].at.After(cs[j].at)
		}
		return cs[i].Path < cs[j].Path
	})
	if len(cs) > MaxChanges {
		cs = cs[:MaxChanges]
	}
	out := make([]relay.ChangedFile, len(cs))
	for i, c := range cs {
		out[i] = c.ChangedFile
	}
	return out
}

// Diff lists the files added, changed (different size or modification time)
// and deleted between two snapshots, newest first, at most MaxChanges.
// Deletions are listed only when both snapshots are complete, since a file
// an incomplete snapshot missed is not known to be gone.
func Diff(before, after Snap) []relay.ChangedFile {
	return sortAndCap(diff(before, after))
}

func diff(before, after Snap) []change {
	var cs []change
	for p, a := range after.Files {
		b, ok := before.Files[p]
		switch {
		case !ok:
			cs = append(cs, change{relay.ChangedFile{Path: p, Change: relay.FileAdded, Size: a.Size}, a.ModTime})
		case b.Size != a.Size || !b.ModTime.Equal(a.ModTime):
			cs = append(cs, change{relay.ChangedFile{Path: p, Change: relay.FileChanged, Size: a.Size}, a.ModTime})
		}
	}
	if before.Complete && after.Complete {
		for p, b := range before.Files {
			if _, ok := after.Files[p]; !ok {
				cs = append(cs, change{relay.ChangedFile{Path: p, Change: relay.FileDeleted}, b.ModTime})
			}
		}
	}
	return cs
}

// Op is what happened to a path while a run worked.
type Op int

// Ops seen by the Watcher or reported by the agent CLI.
const (
	// OpCreate: the path appeared.
	OpCreate Op = iota + 1
	// OpWrite: the path was written to (or its metadata changed).
	OpWrite
	// OpRemove: the path was removed or renamed away.
	OpRemove
)

// Touch is one path that something reported as touched during a run.
type Touch struct {
	Path string
	Op   Op
}

// Changes is Diff plus the touched paths: when either snapshot is
// incomplete, each touched path the diff does not list is checked on disk
// and listed as added, changed or deleted. A path created and removed
// again during the run is left out. When both snapshots are complete the
// diff alone is exact and touched is ignored.
func Changes(before, after Snap, touched []Touch) []relay.ChangedFile {
	cs := diff(before, after)
	if before.Complete && after.Complete {
		return sortAndCap(cs)
	}
	listed := make(map[string]bool, len(cs))
	for _, c := range cs {
		listed[c.Path] = true
	}
	// The last op per path wins, but remember whether it was created.
	last := make(map[string]Op, len(touched))
	created := make(map[string]bool)
	var order []string
	for _, t := range touched {
		if t.Path == "" || !filepath.IsAbs(t.Path) {
			continue
		}
		p := filepath.Clean(t.Path)
		if _, ok := last[p]; !ok {
			order = append(order, p)
		}
		last[p] = t.Op
		if t.Op == OpCreate {
			created[p] = true
		}
	}
	for _, p := range order {
		if listed[p] {
			continue
		}
		b, existed := before.Files[p]
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			// Known before and unchanged on disk: nothing to report.
			if existed && b.Size == fi.Size() && b.ModTime.Equal(fi.ModTime()) {
				continue
			}
			kind := relay.FileChanged
			if !existed && (created[p] || before.Complete) {
				kind = relay.FileAdded
			}
			cs = append(cs, change{relay.ChangedFile{Path: p, Change: kind, Size: fi.Size()}, fi.ModTime()})
		case err != nil && errors.Is(err, fs.ErrNotExist):
			if existed || (!created[p] && !before.Complete && last[p] == OpRemove) {
				cs = append(cs, change{relay.ChangedFile{Path: p, Change: relay.FileDeleted}, b.ModTime})
			}
		}
		listed[p] = true
	}
	return sortAndCap(cs)
}
