package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultMaxTouched bounds the paths a Watcher remembers.
const DefaultMaxTouched = 5000

// maxWatchedDirs bounds the folders one Watcher registers with the OS
// (inotify watches are a per-user resource).
const maxWatchedDirs = 4096

// Watcher records the paths touched in some folders, recursively, while a
// run works. It watches each folder below them (skipping Ignored names and
// symbolic links) and adds folders created later, recording the files found
// in them as created.
//
// The run goroutine alone owns the touched set and the watched-folder
// count, so they need no lock; Close stops that goroutine and waits for it
// before Touched reads the set.
type Watcher struct {
	w          *fsnotify.Watcher
	limits     Limits
	maxTouched int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	queries   chan query

	// Owned by run (and by NewWatcher before run starts).
	touched  map[string]Op
	order    []string
	dirs     int
	overflow bool
}

// NewWatcher starts watching dirs (missing ones are skipped). The set-up
// walk obeys limits like Snapshot; folders past them are not watched, and
// Touched then reports the set incomplete. maxTouched ≤ 0 means
// DefaultMaxTouched.
func NewWatcher(dirs []string, limits Limits, maxTouched int) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if maxTouched <= 0 {
		maxTouched = DefaultMaxTouched
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{
		w:          fw,
		limits:     limits.withDefaults(),
		maxTouched: maxTouched,
		ctx:        ctx,
		cancel:     cancel,
		touched:    make(map[string]Op),
		queries:    make(chan query),
	}
	deadline := time.Now().Add(w.limits.MaxTime)
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			cancel()
			return nil, errors.Join(fmt.Errorf("watch %s: %w", d, err), fw.Close())
		}
		if fi, err := os.Lstat(abs); err != nil || !fi.IsDir() {
			continue
		}
		w.addTree(abs, deadline, false)
	}
	w.wg.Add(1)
	go w.run()
	return w, nil
}

// addTree watches root and the folders below it. When record is set (a
// folder that appeared during the run), the files in it are recorded as
// created, since they may predate the watch.
func (w *Watcher) addTree(root string, deadline time.Time, record bool) {
	stack := []string{root}
	files := 0
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if w.dirs >= maxWatchedDirs || time.Now().After(deadline) {
			w.overflow = true
			return
		}
		if err := w.w.Add(dir); err != nil {
			// Gone already, or out of OS watches: changes below are unseen.
			if !errors.Is(err, fs.ErrNotExist) {
				w.overflow = true
			}
			continue
		}
		w.dirs++
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			t := e.Type()
			p := filepath.Join(dir, e.Name())
			switch {
			case t&fs.ModeSymlink != 0:
			case t.IsDir():
				if !Ignored[e.Name()] {
					stack = append(stack, p)
				}
			case record && t.IsRegular():
				files++
				if files > w.limits.MaxFiles {
					w.overflow = true
					return
				}
				w.touch(p, OpCreate)
			}
		}
	}
}

// touch records op for p, keeping the set bounded.
func (w *Watcher) touch(p string, op Op) {
	if _, ok := w.touched[p]; !ok {
		if len(w.touched) >= w.maxTouched {
			w.overflow = true
			return
		}
		w.order = append(w.order, p)
	}
	// A write after a create is still a creation.
	if prev, ok := w.touched[p]; ok && prev == OpCreate && op == OpWrite {
		return
	}
	w.touched[p] = op
}

// ignoredPath reports whether a path lies in an Ignored folder.
func ignoredPath(p string) bool {
	for dir := filepath.Dir(p); ; {
		if Ignored[filepath.Base(dir)] {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

func (w *Watcher) run() {
	defer w.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.overflow = true
			}
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			w.handle(ev)
		case q := <-w.queries:
			_, seen := w.touched[q.path]
			q.reply <- seen
		}
	}
}

func (w *Watcher) handle(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	if Ignored[filepath.Base(p)] || ignoredPath(p) {
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(p)
		if err != nil {
			return
		}
		switch {
		case fi.IsDir():
			w.addTree(p, time.Now().Add(w.limits.MaxTime), true)
		case fi.Mode().IsRegular():
			w.touch(p, OpCreate)
		}
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		w.touch(p, OpRemove)
	case ev.Has(fsnotify.Write), ev.Has(fsnotify.Chmod):
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			w.touch(p, OpWrite)
		}
	}
}

type query struct {
	path  string
	reply chan bool
}

// Close stops watching and waits for the watcher's goroutine. It is safe to
// call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.cancel()
		w.closeErr = w.w.Close()
		w.wg.Wait()
		if w.closeErr != nil {
			w.closeErr = fmt.Errorf("watch: close: %w", w.closeErr)
		}
	})
	return w.closeErr
}

// Touched closes the watcher (if it is still open) and returns the touched
// paths in the order first seen, with complete false when some were not
// recorded (too many paths or folders, or the OS dropped events).
func (w *Watcher) Touched() (touched []Touch, complete bool) {
	_ = w.Close() // the close error says nothing about what was recorded
	out := make([]Touch, 0, len(w.order))
	for _, p := range w.order {
		out = append(out, Touch{Path: p, Op: w.touched[p]})
	}
	return out, !w.overflow
}
