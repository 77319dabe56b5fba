package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Turn lock: one turn at a time per session. The lock is a file created
// with O_EXCL (atomic on every local file system) holding the owner's pid
// and token. Only the owner releases it; a lock whose owner process is
// gone is reclaimed. Waiters re-try on a short interval: a lock file held
// by another process gives no wake-up to wait on.

// lockRetry is how often a waiter re-tries a held lock.
const lockRetry = 100 * time.Millisecond

// unreadableGrace is how long a lock file may stay unreadable (its owner
// is between creating and writing it) before it counts as abandoned.
const unreadableGrace = 10 * time.Second

// LockInfo is the lock file's content.
type LockInfo struct {
	PID     int       `json:"pid"`
	Token   string    `json:"token"`
	Session string    `json:"session"`
	Since   time.Time `json:"since"`
}

// Lock is a held turn lock.
type Lock struct {
	path string
	info LockInfo
}

// ErrNotOwner refuses a release by someone who does not hold the lock.
var ErrNotOwner = errors.New("the turn lock belongs to another owner")

// LockPath is the lock file of a session under dir.
func LockPath(dir, sessionID string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == 0 {
			return '_'
		}
		return r
	}, sessionID)
	return filepath.Join(dir, safe+".turn.lock")
}

// Acquire takes the session's turn lock for token, waiting (until ctx
// ends) while another live owner holds it, and reclaiming it from an owner
// process that is gone.
func Acquire(ctx context.Context, dir, sessionID, token string) (*Lock, error) {
	for {
		l, _, err := TryAcquire(dir, sessionID, token)
		if err != nil || l != nil {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("turn lock for session %s: %w", sessionID, ctx.Err())
		case <-time.After(lockRetry):
		}
	}
}

// TryAcquire takes the session's turn lock for token if it is free or its
// owner process is gone, without waiting. When another live owner holds
// it, the lock is nil and holder says who (zero while the holder is still
// writing the file).
func TryAcquire(dir, sessionID, token string) (l *Lock, holder LockInfo, err error) {
	if token == "" || sessionID == "" {
		return nil, LockInfo{}, errors.New("turn lock: session and token are required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, LockInfo{}, fmt.Errorf("turn lock: %w", err)
	}
	l = &Lock{path: LockPath(dir, sessionID), info: LockInfo{PID: os.Getpid(), Token: token, Session: sessionID, Since: time.Now().UTC()}}
	body, err := json.Marshal(l.info)
	if err != nil {
		return nil, LockInfo{}, err
	}
	for range 3 { // a reclaimed lock is re-tried; a race lost thrice waits
		ok, err := l.tryCreate(body)
		if err != nil {
			return nil, LockInfo{}, err
		}
		if ok {
			return l, LockInfo{}, nil
		}
		holder, err = ReadLock(l.path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // released meanwhile
		case err != nil:
			// Being written, or left empty by an owner that died between
			// creating and writing it: only an old one is reclaimed.
			if fi, serr := os.Stat(l.path); serr != nil || time.Since(fi.ModTime()) < unreadableGrace {
				return nil, LockInfo{}, nil
			}
			if err := reclaim(l.path, LockInfo{}); err != nil {
				return nil, LockInfo{}, err
			}
		case processAlive(holder.PID):
			return nil, holder, nil
		default:
			if err := reclaim(l.path, holder); err != nil {
				return nil, LockInfo{}, err
			}
		}
	}
	return nil, holder, nil
}

// tryCreate creates the lock file if it does not exist.
func (l *Lock) tryCreate(body []byte) (bool, error) {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("turn lock: %w", err)
	}
	_, werr := f.Write(body)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(l.path)
		return false, fmt.Errorf("turn lock: write %s: %w", l.path, err)
	}
	return true, nil
}

// ReadLock reads a lock file. A file being written (empty or partial)
// reads as an error, so it is never taken for a dead owner's.
func ReadLock(path string) (LockInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return LockInfo{}, err
	}
	var info LockInfo
	if err := json.Unmarshal(b, &info); err != nil || info.PID <= 0 || info.Token == "" {
		return LockInfo{}, fmt.Errorf("turn lock %s: unreadable: %q", path, b)
	}
	return info, nil
}

// reclaim removes a dead owner's lock (dead is zero for an abandoned,
// unreadable file). It moves the file aside first and checks it is still
// that owner's: if another waiter replaced it in between, the new lock is
// put back (a hard link never overwrites).
func reclaim(path string, dead LockInfo) error {
	aside := fmt.Sprintf("%s.stale-%d-%d", path, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(path, aside); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // someone else reclaimed it
		}
		return fmt.Errorf("turn lock: reclaim %s: %w", path, err)
	}
	defer os.Remove(aside)
	got, err := ReadLock(aside)
	abandoned := dead == (LockInfo{}) && err != nil
	if !abandoned && (err != nil || got.Token != dead.Token || got.PID != dead.PID) {
		if err := os.Link(aside, path); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("turn lock: restore %s: %w", path, err)
		}
	}
	return nil
}

// Info is what the lock file says.
func (l *Lock) Info() LockInfo { return l.info }

// Release removes the lock if it is still this owner's; otherwise it
// returns ErrNotOwner and leaves the file alone.
func (l *Lock) Release() error { return Release(filepath.Dir(l.path), l.info.Session, l.info.Token) }

// Release removes the session's lock held with token. A lock held with
// another token is refused with ErrNotOwner.
func Release(dir, sessionID, token string) error {
	path := LockPath(dir, sessionID)
	info, err := ReadLock(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Token != token {
		return fmt.Errorf("release the turn lock of session %s: %w (pid %d)", sessionID, ErrNotOwner, info.PID)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release the turn lock of session %s: %w", sessionID, err)
	}
	return nil
}
