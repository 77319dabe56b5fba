package project

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// StoreFile is the store's file name in its folder.
const StoreFile = "projects.json"

// maxStoreSize bounds the file read (a few thousand projects fit).
const maxStoreSize = 4 << 20

// lockStale is how old a lock left behind by a process that died may be
// before another takes it over (a holder's work under it is bounded well
// below: the CLI gives the relay 15 s); lockWait is how long one waits.
const (
	lockStale = 60 * time.Second
	lockWait  = 40 * time.Second
)

// Project is one registered project folder.
type Project struct {
	ID string `json:"id"`
	// Dir is the folder's absolute, cleaned path.
	Dir string `json:"dir"`
	// Relay is the base URL of the relay the agent was created on.
	Relay string `json:"relay"`
	// Token is the project agent's token (cca_…).
	Token        string `json:"token"`
	RegisteredAt string `json:"registeredAt"`
}

type storeFile struct {
	Version  int       `json:"version"`
	Projects []Project `json:"projects"`
}

// Store is the per-user file of registered projects: projects.json in a
// folder of the user's own config folder, owner-only (folder 0700, file
// 0600). Changes are made under a lock (a folder created next to the file),
// so sessions that start at the same time do not lose each other's writes.
type Store struct {
	dir string
}

// DefaultDir is the store's folder: crosschat-relay in the user's config
// folder ($XDG_CONFIG_HOME or ~/.config on Linux, ~/Library/Application
// Support on macOS, %AppData% on Windows).
func DefaultDir() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the user's config folder: %w", err)
	}
	return filepath.Join(base, "crosschat-relay"), nil
}

// Open returns the store kept in dir (created on the first write).
func Open(dir string) *Store { return &Store{dir: dir} }

// Path is the store's file.
func (s *Store) Path() string { return filepath.Join(s.dir, StoreFile) }

// List returns every registered project, by id.
func (s *Store) List() ([]Project, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Projects, nil
}

// Get returns the project with id.
func (s *Store) Get(id string) (Project, bool, error) {
	f, err := s.read()
	if err != nil {
		return Project{}, false, err
	}
	for _, p := range f.Projects {
		if p.ID == id {
			return p, true, nil
		}
	}
	return Project{}, false, nil
}

// Find returns the project registered for dir or the nearest folder above
// it (a session may run in a subfolder of its project).
func (s *Store) Find(dir string) (Project, bool, error) {
	f, err := s.read()
	if err != nil {
		return Project{}, false, err
	}
	if i := Nearest(f.Projects, dir); i >= 0 {
		return f.Projects[i], true, nil
	}
	return Project{}, false, nil
}

// Nearest returns the index in ps of the project whose folder is dir or
// the nearest folder above it, as git finds .git; -1 for none.
func Nearest(ps []Project, dir string) int {
	dir = filepath.Clean(dir)
	for {
		for i, p := range ps {
			if SameDir(p.Dir, dir) {
				return i
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return -1
		}
		dir = up
	}
}

// Update runs fn on the registered projects under the store's lock and
// writes what it returns (unless fn returns an error or changed is false).
func (s *Store) Update(fn func(projects []Project) (out []Project, changed bool, err error)) error {
	if err := s.ensureDir(); err != nil {
		return err
	}
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	out, changed, err := fn(append([]Project(nil), f.Projects...))
	if err != nil || !changed {
		return err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return s.write(storeFile{Version: 1, Projects: out})
}

func (s *Store) read() (storeFile, error) {
	var f storeFile
	fh, err := os.Open(s.Path())
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read the project store: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return f, fmt.Errorf("read the project store: %w", err)
	}
	if st.Size() > maxStoreSize {
		return f, fmt.Errorf("the project store %s is %d bytes, more than %d", s.Path(), st.Size(), maxStoreSize)
	}
	dec := json.NewDecoder(fh)
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("the project store %s is damaged (%v): move it away and register the projects again", s.Path(), err)
	}
	return f, nil
}

func (s *Store) write(f storeFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("write the project store: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".projects-*.tmp")
	if err != nil {
		return fmt.Errorf("write the project store: %w", err)
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the project store: %w", err)
	}
	// CreateTemp makes the file 0600 already; say so for other systems.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the project store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the project store: %w", err)
	}
	return nil
}

// ensureDir creates the store's folder owner-only and tightens a wider one.
func (s *Store) ensureDir() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create the project store's folder: %w", err)
	}
	st, err := os.Stat(s.dir)
	if err != nil {
		return fmt.Errorf("create the project store's folder: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return fmt.Errorf("restrict the project store's folder: %w", err)
		}
	}
	return nil
}

// lock takes the store's lock: a folder next to the file (os.Mkdir is
// atomic everywhere). A lock older than lockStale was left by a process
// that died and is taken over, by one waiter only (see takeOver).
func (s *Store) lock() (func(), error) {
	path := s.Path() + ".lock"
	deadline := time.Now().Add(lockWait)
	for {
		err := os.Mkdir(path, 0o700)
		if err == nil {
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock the project store: %w", err)
		}
		if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > lockStale {
			takeOver(path)
			if time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
				continue
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the project store is locked (%s); if no crosschat-relay command is running, remove that folder", path)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// takeOver removes the stale lock folder path so that of several waiters
// that found it stale only one does, and never a newer lock: under a
// second lock (path+".takeover", os.Mkdir again) the lock is looked at once
// more and removed only if it is still stale. Only a takeover removes a
// stale lock and a new one is made only where none is, so a lock still
// stale under the takeover lock is the one found. A takeover lock left by
// a process that died while holding it (for an instant) is removed once it
// is stale itself.
func takeOver(path string) {
	guard := path + ".takeover"
	if err := os.Mkdir(guard, 0o700); err != nil {
		if st, err := os.Stat(guard); err == nil && time.Since(st.ModTime()) > lockStale {
			_ = os.Remove(guard)
		}
		return
	}
	defer os.Remove(guard)
	if st, err := os.Stat(path); err == nil && time.Since(st.ModTime()) > lockStale {
		_ = os.Remove(path)
	}
}

// SameDir reports whether two cleaned absolute folders are the same
// (case-insensitively on Windows and macOS, whose file systems usually are).
func SameDir(a, b string) bool {
	if a == b {
		return true
	}
	return caseInsensitiveFS && strings.EqualFold(a, b)
}

// caseInsensitiveFS is true where folder names usually ignore case.
var caseInsensitiveFS = runtime.GOOS == "windows" || runtime.GOOS == "darwin"
