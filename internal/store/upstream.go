package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// importMarkerKey is the settings key that records an import: the source's
// SHA-256 and when it was imported.
const importMarkerKey = "import.upstream"

// ImportOptions configure ImportUpstream.
type ImportOptions struct {
	// Store are the options the target database is opened with.
	Store Options
	// KnownHarness reports whether a worker's harness id exists in this
	// build; workers with other harnesses are skipped. Nil keeps them all.
	KnownHarness func(id string) bool
}

// ImportResult says what an import did.
type ImportResult struct {
	// Source is the upstream file that was read.
	Source string `json:"source"`
	// Kept is where the untouched upstream file is now (the source itself,
	// or where it was moved when it was the target's own relay.db).
	Kept string `json:"kept"`
	// Backup is a byte-for-byte copy of the upstream file made before anything else.
	Backup string `json:"backup"`
	// AlreadyImported is true when this source had been imported before:
	// nothing was changed.
	AlreadyImported bool `json:"alreadyImported"`
	// Counts are the rows imported per table.
	Counts map[string]int `json:"counts"`
	// SkippedWorkers are the workers whose harness this build does not know.
	SkippedWorkers []string `json:"skippedWorkers,omitempty"`
	// Workers are the imported workers, each disabled, with what it would
	// run: the operator enables them one by one after reading this.
	Workers []ImportedWorker `json:"workers,omitempty"`
	// RevokedTokens are the agents whose upstream token was not imported:
	// an imported database brings no credential (it is a file anyone may
	// hand over, and a token in it acts as that agent), so each gets a new
	// token from the operator (the Agents page's Issue token) and is set
	// up with it again. No person (the operator included) ever gets a
	// token from an import.
	RevokedTokens []string `json:"revokedTokens,omitempty"`
	// RevokedInvites are the invites (label, or id when it has none) that
	// could still enrol agents upstream: they arrive revoked, for the same
	// reason; the operator creates new ones.
	RevokedInvites []string `json:"revokedInvites,omitempty"`
	// OpenTasks are, per recipient, the tasks that came along queued or
	// claimed: a worker the operator enables (or sets up) for that agent
	// runs them as they are, in the name the file gives their sender (the
	// operator's included), so the summary names them to be read first.
	OpenTasks map[string]int `json:"openTasks,omitempty"`
	// SkippedTasks counts the tasks not imported, with their reports and
	// run activity: their ids are no UUIDs, so no reader here could open
	// or cancel them.
	SkippedTasks int `json:"skippedTasks,omitempty"`
	// UpstreamVersion is the upstream file's schema version.
	UpstreamVersion int `json:"upstreamVersion"`
}

// ImportedWorker is one worker an import brought in, disabled.
type ImportedWorker struct {
	AgentSlug string `json:"agentSlug"`
	Harness   string `json:"harness"`
	// Command is the custom program the worker would run; empty for a
	// preset, whose own program is found when the worker is enabled.
	Command string `json:"command"`
	// Args are the custom program's arguments (none for a preset).
	Args           []string `json:"args"`
	Workdir        string   `json:"workdir"`
	ExtraDirs      []string `json:"extraDirs"`
	AllowedSenders []string `json:"allowedSenders"`
}

// importMarker is the value stored under importMarkerKey.
type importMarker struct {
	SHA256     string `json:"sha256"`
	From       string `json:"from"`
	ImportedAt string `json:"importedAt"`
}

// ImportUpstream copies an upstream relay's database at src into our
// database at dst: agents with their token hashes (their tokens keep
// working), invites, tasks with reports and run activity, the journal with
// its sequences and every agent's read cursor, the settings both relays
// share, and workers whose harness exists here, each disabled (see
// copyWorkers). Run tokens are not imported
// (they belong to runs that ended with the old process).
//
// The upstream file is never written: it is copied to a backup beside dst
// first, and the import reads that copy. When src is dst itself (the data
// folder still holds the upstream relay.db), the original is moved aside
// unchanged to relay-upstream.db and a new relay.db is made. The import is
// one transaction; running it again with the same source changes nothing,
// and importing into a database that already holds other data is refused.
func ImportUpstream(ctx context.Context, src, dst string, opts ImportOptions) (res ImportResult, err error) {
	src, err = filepath.Abs(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	dst, err = filepath.Abs(dst)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	res = ImportResult{Source: src, Kept: src, Counts: map[string]int{}}
	inPlace := src == dst
	if inPlace {
		if up, _, err := DetectUpstream(src); err != nil {
			return res, fmt.Errorf("import: %w", err)
		} else if !up {
			// Already ours: an earlier import moved the upstream file aside.
			return alreadyImported(ctx, dst, res, opts)
		}
	}
	up, version, err := DetectUpstream(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if !up {
		return res, fmt.Errorf("import: %s is not a database of the upstream Crosschat Relay", src)
	}
	res.UpstreamVersion = version
	sum, err := fileSHA256(src)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return res, fmt.Errorf("import: create data folder: %w", err)
	}
	if inPlace {
		kept, err := freeName(filepath.Join(filepath.Dir(dst), "relay-upstream.db"))
		if err != nil {
			return res, fmt.Errorf("import: %w", err)
		}
		if err := moveDB(src, kept); err != nil {
			return res, fmt.Errorf("import: move the upstream database aside: %w", err)
		}
		res.Kept, src = kept, kept
		defer func() {
			if err != nil { // put the upstream file back where it was
				_ = removeDB(dst)
				if merr := moveDB(kept, dst); merr != nil {
					err = errors.Join(err, fmt.Errorf("restore %s: %w", dst, merr))
				} else {
					res.Kept = dst
				}
			}
		}()
	} else if done, err := markerMatches(ctx, dst, sum); err != nil {
		return res, err
	} else if done {
		res.AlreadyImported = true
		return res, nil
	}
	backup, err := freeName(filepath.Join(filepath.Dir(dst), "relay-upstream.backup.db"))
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := copyDB(src, backup); err != nil {
		return res, fmt.Errorf("import: back up %s: %w", src, err)
	}
	res.Backup = backup
	// The import reads its own scratch copy, so not even SQLite's -shm file
	// appears beside the kept original.
	scratch, err := os.MkdirTemp(filepath.Dir(dst), ".import-")
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(scratch)
	work := filepath.Join(scratch, "upstream.db")
	if err := copyDB(src, work); err != nil {
		return res, fmt.Errorf("import: copy %s: %w", src, err)
	}

	// Make (or migrate) our database, then check it holds nothing else.
	db, err := Open(dst, opts.Store)
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	if err := db.Close(); err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	marker, _ := json.Marshal(importMarker{SHA256: sum, From: res.Kept, ImportedAt: relay.FormatTime(time.Now())})
	if err := copyRows(ctx, dst, work, string(marker), opts, &res); err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	return res, nil
}

// alreadyImported answers a second in-place import: dst is ours and was
// made by an import.
func alreadyImported(ctx context.Context, dst string, res ImportResult, opts ImportOptions) (ImportResult, error) {
	m, err := readMarker(ctx, dst)
	if err != nil {
		return res, err
	}
	if m == nil {
		return res, fmt.Errorf("import: %s is already a Crosschat Relay database and holds no upstream import; name the upstream file with --from", dst)
	}
	res.AlreadyImported = true
	res.Kept = m.From
	res.Source = m.From
	return res, nil
}

func readMarker(ctx context.Context, dst string) (*importMarker, error) {
	if _, err := os.Stat(dst); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	ro, err := sql.Open("sqlite3", dsn(dst, "mode=ro&_busy_timeout=5000"))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer ro.Close()
	var v string
	err = ro.QueryRowContext(ctx, settingSQL, importMarkerKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("import: read %s: %w", dst, err)
	}
	var m importMarker
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("import: %s: bad import marker: %w", dst, err)
	}
	return &m, nil
}

func markerMatches(ctx context.Context, dst, sum string) (bool, error) {
	m, err := readMarker(ctx, dst)
	if err != nil || m == nil {
		return false, err
	}
	if m.SHA256 == sum {
		return true, nil
	}
	return false, fmt.Errorf("import: %s already holds an import from %s; import into an empty data folder", dst, m.From)
}
