// Package store is the SQLite implementation of relay.Service.
//
// Every state change is one write on a single writer connection, run in its
// own SAVEPOINT; the writer goroutine commits all writes waiting at one
// moment in one BEGIN IMMEDIATE transaction (group commit: one fsync per
// batch). A write's journal events are written in the same savepoint, and
// its relay.Changes are published, its waiters woken and its caller
// answered only after the commit.
// Reads go through a separate read-only connection pool.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// The SQLite driver; this package is its only importer.
	_ "github.com/mattn/go-sqlite3"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// stmtCacheSize is how many prepared statements each connection keeps;
// the store's queries are fixed strings, so re-preparing them is waste.
const stmtCacheSize = "64"

// pageSize is the page size of a new database file, half SQLite's default.
// Every commit writes each page it changed to the WAL, and a task change
// touches a few small rows and their index entries: smaller pages mean
// fewer bytes written and synced per commit (docs/performance.md has the
// figures). Existing files keep the page size they were made with.
const pageSize = 2048

// presenceThrottle is how often a presence-only agent change is published per agent.
const presenceThrottle = 30 * time.Second

// ErrClosed is returned by writes attempted after Close.
var ErrClosed = errors.New("store is closed")

// Options configure Open. The zero value gives the defaults.
type Options struct {
	// OperatorSlug is the human operator's slug; default "operator". It must
	// be a valid slug.
	OperatorSlug string
	// RetentionDays is how long completed and cancelled tasks are kept before
	// Sweep deletes them; default 30. Fractions are allowed.
	RetentionDays float64
	// MaxEvents is how many journal events are kept; default relay.DefaultMaxEvents.
	MaxEvents int
	// Now is the clock; default time.Now. Tests inject one.
	Now func() time.Time
	// Logger receives operational messages (migrations); default discards.
	Logger *slog.Logger

	// driver is the database/sql driver of the relay's connections; default
	// "sqlite3". Tests name one that watches statements being prepared.
	driver string
}

// DB is the SQLite-backed relay.Service.
type DB struct {
	w         *sql.DB // the single writer connection
	r         *sql.DB // read-only pool
	path      string
	operator  string
	retention time.Duration
	maxEvents int64
	now       func() time.Time
	log       *slog.Logger

	broker  relay.Broker
	waiters relay.Waiters
	parking parking // claims a post may hand its task to (task_claim.go)

	healthy   atomic.Bool
	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	presenceMu sync.Mutex
	presence   map[string]time.Time // slug → when its agent change was last published
	book       presenceBook         // open push streams and the directory's word (presence.go)

	secrets atomic.Pointer[[]string] // scrubbed from reports and posted tasks (SetSecrets)

	auth authCache // recent answers of Authenticate and WorkerOnly (authcache.go)

	// outboxHead is the mesh outbox's head as the last commit left it, -1
	// when not known (commits.go).
	outboxHead atomic.Int64

	sessions atomic.Pointer[SessionResolver] // resolves a post's targetSession (workers_sessions.go)

	// The writer goroutine (group commit, see write).
	queue       chan *writeReq // unbuffered: a sender is a waiting write
	quit        chan struct{}  // closed by Close
	writerDone  chan struct{}  // closed when the writer has stopped
	waiting     atomic.Int64   // writes handed to write and not yet answered
	batches     atomic.Int64
	writes      atomic.Int64
	busy        atomic.Int64 // ns the writer spent on batches
	committing  atomic.Int64 // ns of busy spent in COMMIT
	checkpoints atomic.Int64 // checkpoints the writer ran between batches

	// walked is, per agent, the newest event sequence up to which the
	// journal is known to hold no unread event for it (events.go). Only the
	// writer goroutine touches it.
	walked map[string]int64
}

var _ relay.Service = (*DB)(nil)

// Open opens (creating if needed) the relay database at path, migrates it to
// SchemaVersion and ensures the human operator exists. A database written by
// a newer version is refused without being modified.
func Open(path string, opts Options) (*DB, error) {
	ctx := context.Background()
	if opts.OperatorSlug == "" {
		opts.OperatorSlug = relay.DefaultOperatorSlug
	}
	operator, err := relay.NormalizeSlug("operator slug", opts.OperatorSlug)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if opts.RetentionDays == 0 {
		opts.RetentionDays = relay.DefaultRetentionDays
	}
	if opts.RetentionDays < 0 {
		return nil, fmt.Errorf("open store: retention days must be positive, got %v", opts.RetentionDays)
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = relay.DefaultMaxEvents
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.driver == "" {
		opts.driver = "sqlite3"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open store: create data directory: %w", err)
	}
	if err := refuseNewer(ctx, abs); err != nil {
		return nil, err
	}
	if err := create(ctx, abs); err != nil {
		return nil, err
	}

	db := &DB{
		path:       abs,
		operator:   operator,
		retention:  time.Duration(opts.RetentionDays * float64(24*time.Hour)),
		maxEvents:  int64(opts.MaxEvents),
		now:        opts.Now,
		log:        opts.Logger,
		presence:   make(map[string]time.Time),
		queue:      make(chan *writeReq),
		quit:       make(chan struct{}),
		writerDone: make(chan struct{}),
		walked:     make(map[string]int64),
	}
	db.healthy.Store(true)
	db.outboxHead.Store(-1) // read from the database until the first commit

	db.w, err = sql.Open(opts.driver, dsn(abs, "_txlock=immediate&_journal_mode=WAL&_synchronous=FULL&_foreign_keys=on&_busy_timeout=5000&_stmt_cache_size="+stmtCacheSize))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)
	if err := db.w.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store: %w", err), db.w.Close())
	}
	if err := db.migrate(ctx, abs); err != nil {
		return nil, errors.Join(fmt.Errorf("open store: %w", err), db.w.Close())
	}

	db.r, err = sql.Open(opts.driver, dsn(abs, "mode=ro&_query_only=true&_foreign_keys=on&_busy_timeout=5000&_stmt_cache_size="+stmtCacheSize))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open store: readers: %w", err), db.w.Close())
	}
	db.r.SetMaxOpenConns(8)
	db.r.SetMaxIdleConns(8)
	if err := db.r.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store: readers: %w", err), db.r.Close(), db.w.Close())
	}

	go db.writer()
	if err := db.ensureOperator(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open store: %w", err), db.Close())
	}
	return db, nil
}

// create makes a new, empty database file at path with pageSize pages, in
// WAL mode (which writes its header, fixing the page size), unless a
// database is there already.
func create(ctx context.Context, path string) error {
	switch st, err := os.Stat(path); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil // Open's next step reports it
	case st.Size() > 0:
		return nil // an existing database keeps its page size
	}
	// New, or 0 bytes (a creation cut short).
	c, err := sql.Open("sqlite3", dsn(path, ""))
	if err != nil {
		return fmt.Errorf("open store: create %s: %w", path, err)
	}
	_, err = c.ExecContext(ctx, "PRAGMA page_size = "+strconv.Itoa(pageSize)+"; PRAGMA journal_mode = WAL")
	if err = errors.Join(err, c.Close()); err != nil {
		return fmt.Errorf("open store: create %s: %w", path, err)
	}
	return nil
}

// refuseNewer reads the schema version and shape of an existing file
// through a read-only connection, so a newer database, or one written by
// the upstream relay (UpstreamError), is never touched (not even switched
// to WAL).
func refuseNewer(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	v, upstream, err := inspect(ctx, path)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	if upstream {
		return &UpstreamError{Path: path, SchemaVersion: v}
	}
	if v > SchemaVersion {
		return newerSchemaError(path, v)
	}
	return nil
}

// dsn builds a go-sqlite3 URI for path with the given query parameters.
func dsn(path, params string) string {
	u := url.URL{Path: filepath.ToSlash(path)}
	p := u.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // Windows drive paths: file:/C:/...
	}
	return "file:" + p + "?" + params
}

// Close wakes every waiting claim (they return nil at once), ends change
// subscriptions and closes the connections. It is safe to call more than once.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closed.Store(true)
		db.waiters.Close()
		db.broker.Close()
		if db.quit != nil {
			close(db.quit)
			<-db.writerDone // the batch in progress commits and answers first
		}
		var errs []error
		if db.r != nil {
			errs = append(errs, db.r.Close())
		}
		if db.w != nil {
			errs = append(errs, db.w.Close())
		}
		if err := errors.Join(errs...); err != nil {
			db.closeErr = fmt.Errorf("close store: %w", err)
		}
	})
	return db.closeErr
}

// Healthy reports whether the last write succeeded (or nothing failed yet).
func (db *DB) Healthy() bool { return db.healthy.Load() }

// OperatorSlug is the human operator's slug.
func (db *DB) OperatorSlug() string { return db.operator }

// Subscribe streams committed changes; see relay.Broker.Subscribe.
func (db *DB) Subscribe(buffer int) (<-chan relay.Change, func()) {
	return db.broker.Subscribe(buffer)
}

// IntegrityCheck opens the database at path read-only and runs PRAGMA
// integrity_check. It returns nil only when SQLite answers "ok".
func IntegrityCheck(path string) (err error) {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	ro, err := sql.Open("sqlite3", dsn(path, "mode=ro&_busy_timeout=5000"))
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer func() {
		if cerr := ro.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("integrity check: close: %w", cerr)
		}
	}()
	rows, err := ro.Query("PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return errors.Join(fmt.Errorf("integrity check: %w", err), rows.Close())
		}
		problems = append(problems, line)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) == 1 && problems[0] == "ok" {
		return nil
	}
	return fmt.Errorf("integrity check of %s failed: %s", path, strings.Join(problems, "; "))
}

// Publish sends changes that are not database writes (worker status) to the
// same subscribers as committed changes.
func (db *DB) Publish(changes ...relay.Change) { db.broker.Publish(changes...) }
