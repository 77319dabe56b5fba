package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/filelock"
)

// lockFileName is the file in the data folder that a relay holds locked
// while it serves (and an import while it writes the database).
const lockFileName = "crosschat-relay.lock"

// lockDataDir takes the data folder's lock, held until Unlock or the
// process's end (a crash included), so that one relay at a time opens the
// folder's database. When another process holds it, the error names that
// relay's pid and address if its run file tells them. Once locked, a run
// file left in the folder is removed: its relay no longer holds the lock
// (it was killed), and a relay refused while this one starts would
// otherwise name that dead relay's pid, which another process may have
// taken since.
//
// A lock held for a moment only is waited for, up to lockProbeWait: a
// start refused on the port looks at the lock that way (portHolder), and
// the relay that does hold the port must not lose its own start to it.
func lockDataDir(dir string) (*filelock.File, error) {
	l, err := filelock.Lock(filepath.Join(dir, lockFileName))
	for deadline := time.Now().Add(lockProbeWait); errors.Is(err, filelock.ErrLocked) && time.Now().Before(deadline); {
		time.Sleep(lockProbeWait / 10)
		l, err = filelock.Lock(filepath.Join(dir, lockFileName))
	}
	if errors.Is(err, filelock.ErrLocked) {
		who := ""
		if info, ok, err := ReadRunFile(dir); err == nil && ok {
			who = fmt.Sprintf(" (pid %d, %s)", info.PID, info.URL)
		}
		return nil, runningError(fmt.Sprintf("another relay%s is already serving the data folder %s: stop it first or choose another --data-dir", who, dir))
	}
	if err != nil {
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	// Best effort: on Windows a file another program has open at the
	// moment cannot be removed, and the relay's own replaces it anyway.
	_ = os.Remove(filepath.Join(dir, RunFileName))
	return l, nil
}

// lockProbeWait is how long lockDataDir waits for a lock another process
// holds before it refuses: longer than portHolder holds one.
const lockProbeWait = 200 * time.Millisecond

// runningError is a refusal because a relay already serves the data
// folder: it is ErrAlreadyRunning.
type runningError string

func (e runningError) Error() string { return string(e) }

func (e runningError) Is(target error) bool { return target == ErrAlreadyRunning }

// ownFile reports whether name is a file the relay keeps in its data
// folder: the database and its WAL files, the admin token, run folders,
// the log, the run, lock and window files (and their temporaries).
func ownFile(name string) bool {
	switch name {
	case "runs", config.TokenFile:
		return true
	}
	if webViewData[name] {
		return true
	}
	for _, prefix := range []string{config.DatabaseFile, "crosschat-relay.", "window.json", config.TokenFile + "."} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// webViewData names what the window's web view (WebKitGTK) keeps in
// $XDG_DATA_HOME/<program name>, which is also the relay's default data
// folder on Linux. WebKit creates some of it (mediakeys) before the relay
// starts, so on a first launch these are the app's own files too.
var webViewData = map[string]bool{
	"mediakeys": true, "localstorage": true, "databases": true, "indexeddb": true, "storage": true,
	"serviceworkers": true, "CacheStorage": true, "deviceidhashsalts": true, "hsts-storage.sqlite": true,
	"itp": true, "resourceloadstatistics": true, "websql": true, "cookies.sqlite": true,
}

// checkDataDir refuses a data folder that is not the relay's own: a
// filesystem root, the home folder, or an existing folder holding other
// files. The relay makes its data folder owner-only (0700), and must never
// do that to a folder the user keeps other things in. A folder that already
// holds relay.db is the relay's, whatever else is in it.
func checkDataDir(dir, home string) error {
	if dir == "" {
		return errors.New("data folder: no folder given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	real := abs
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		real = r
	}
	if isRoot(abs) || isRoot(real) {
		return fmt.Errorf("data folder %s is the root of a filesystem; choose a folder of its own, for example %s", dir, filepath.Join(home, ".crosschat"))
	}
	if home != "" {
		h, err := filepath.Abs(home)
		if err == nil {
			if r, err := filepath.EvalSymlinks(h); err == nil {
				h = r
			}
			if real == h || abs == filepath.Clean(home) {
				return fmt.Errorf("data folder %s is the home folder; choose a folder of its own, for example %s", dir, filepath.Join(home, ".crosschat"))
			}
		}
	}
	f, err := os.Open(real)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the relay creates it
	}
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("data folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("data folder %s is a file, not a folder", dir)
	}
	if _, err := os.Lstat(filepath.Join(real, config.DatabaseFile)); err == nil {
		return nil
	}
	for {
		names, err := f.Readdirnames(64)
		for _, n := range names {
			if !ownFile(n) {
				return fmt.Errorf("data folder %s already holds other files (%s); the relay makes its data folder private, so give it an empty or new folder of its own", dir, n)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data folder %s: %w", dir, err)
		}
	}
}

// isRoot reports whether p is a filesystem root ("/", "C:\").
func isRoot(p string) bool {
	p = filepath.Clean(p)
	return filepath.Dir(p) == p
}

// ensureDataDir checks that cfg's data folder is the relay's own, then
// creates it owner-only.
func ensureDataDir(cfg config.Config) error {
	home, _ := os.UserHomeDir()
	if err := checkDataDir(cfg.DataDir, home); err != nil {
		return err
	}
	return cfg.EnsureDataDir()
}

// overlapsDataDir reports whether dir is the data folder, holds it or is
// inside it (symlinks resolved): a run there could read the admin token and
// the database, or change them.
func overlapsDataDir(dir, dataDir string) bool {
	if dataDir == "" {
		return false
	}
	resolve := func(p string) string {
		p, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	a, d := resolve(dir), resolve(dataDir)
	within := func(child, parent string) bool {
		rel, err := filepath.Rel(parent, child)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
	}
	return within(d, a) || within(a, d)
}
