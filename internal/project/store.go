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

	"github.com/crosschat/crosschat-relay/internal/filelock"
)

// StoreFile is the store's file name in its folder.
const StoreFile = "projects.json"

// LockFile is the file in the store's folder that a change holds locked.
const LockFile = "projects.lock"

// maxStoreSize bounds the file read (a few thousand projects fit).
const maxStoreSize = 4 << 20

// lockWait is how long a change waits for the store's lock held by another
// command (whose work under it is bounded well below: the CLI gives the
// relay 15 s).
const lockWait = 40 * time.Second

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
// 0600). Changes are made under a lock (a file locked next to it, which the
// system frees when its holder ends, however it ends), so sessions that
// start at the same time do not lose each other's writes.
type Store struct {
	dir string
	// waiting is called once when a change has waited a second for
	// another command's lock (SetWaiting).
	waiting func(lock string)
}

// SetWaiting has f called, with the lock file's path, once a change has
// waited a second for the lock another command holds, so the command can
// say what it waits for.
func (s *Store) SetWaiting(f func(lock string)) { s.waiting = f }

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

// lock takes the store's lock, waiting up to lockWait for another command
// that holds it. (Older versions locked with a folder, projects.json.lock,
// which a command killed while holding it left behind; it is not used.)
func (s *Store) lock() (func(), error) {
	path := filepath.Join(s.dir, LockFile)
	start := time.Now()
	deadline, said := start.Add(lockWait), false
	for {
		l, err := filelock.Lock(path)
		switch {
		case err == nil:
			return func() { _ = l.Unlock() }, nil
		case !errors.Is(err, filelock.ErrLocked):
			return nil, fmt.Errorf("lock the project store: %w", err)
		case time.Now().After(deadline):
			return nil, fmt.Errorf("the project store is locked by another crosschat-relay command (%s) that has not finished in %s", path, lockWait)
		case !said && s.waiting != nil && time.Since(start) >= time.Second:
			s.waiting(path)
			said = true
		}
		time.Sleep(25 * time.Millisecond)
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
