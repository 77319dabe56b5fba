package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Group commit bounds: a batch takes at most maxBatch writes, and stops
// taking more once it has run for maxBatchTime, so a write's latency stays
// flat under load.
// They are variables only so that tests can hold a batch open.
var (
	maxBatch     = 128
	maxBatchTime = 5 * time.Millisecond
)

// writeReq is one write waiting for the writer goroutine.
type writeReq struct {
	ctx  context.Context
	op   string
	fn   func(t *tx) error
	done chan error // buffered; gets exactly one answer, after the commit
}

// WriteStats counts the writer's work since Open.
type WriteStats struct {
	// Batches is how many transactions were committed (one fsync each).
	Batches int64
	// Writes is how many writes those batches held.
	Writes int64
	// Busy is how long the writer spent on batches, from taking a batch's
	// first write until its writes are answered; every write waits for the writer,
	// so the share of time it is busy shows how close it is to the limit.
	Busy time.Duration
	// Committing is the part of Busy spent in COMMIT, the fsync included.
	Committing time.Duration
}

// WriteStats reports the writer's work so far.
func (db *DB) WriteStats() WriteStats {
	return WriteStats{Batches: db.batches.Load(), Writes: db.writes.Load(),
		Busy: time.Duration(db.busy.Load()), Committing: time.Duration(db.committing.Load())}
}

// write runs fn as one write: the single writer goroutine runs it in its
// own SAVEPOINT inside a BEGIN IMMEDIATE transaction that it shares with
// every other write waiting at that moment (group commit), and commits
// them together: one fsync for the batch. A write whose fn fails is rolled
// back to its savepoint alone and gets its own error; the others commit.
// The answer, the publishing of the collected changes and the wake-ups all
// happen only after the commit has returned. A failure that is not a
// domain refusal marks the store unhealthy until the next successful write.
func (db *DB) write(ctx context.Context, op string, fn func(t *tx) error) error {
	if db.closed.Load() {
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	req := &writeReq{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)}
	db.waiting.Add(1)
	defer db.waiting.Add(-1)
	select {
	case db.queue <- req:
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case <-db.quit:
		return fmt.Errorf("%s: %w", op, ErrClosed)
	}
	// Once taken, a write is always answered, and within one bounded batch.
	return <-req.done
}

// writer runs batches until Close. The queue is unbuffered, so "waiting"
// means a caller blocked in write; a lone write starts a batch at once.
//
// Once idleCheckpointBatches batches have committed since its last
// checkpoint, the writer checkpoints the WAL (copies its pages into the
// database file) the first time it finds no write waiting, rather than
// leaving it to SQLite, whose automatic checkpoint runs inside the COMMIT
// that takes the WAL past 1,000 pages: the write behind that COMMIT, and
// every write waiting for it, would wait for the copy and its fsync too.
// Under load that leaves the writer no idle moment, the automatic
// checkpoint still bounds the WAL.
//
// At that idle moment the writer first waits, once, up to idleCheckpointWait
// for a write (run at once if one comes). The checkpoint is a long cgo call
// that keeps the writer's processor, and whoever the last batch answered or
// handed a task waits in that processor's run queue: until the call ends, or
// the runtime, asleep after an idle spell, takes the processor back. Parked
// on the queue, the writer lets them run first.
func (db *DB) writer() {
	defer close(db.writerDone)
	since := 0      // batches since the last checkpoint
	waited := false // the writer waited once since then
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for {
		select {
		case req := <-db.queue:
			db.batch(req)
			since++
		case <-db.quit:
			return
		}
		for since >= idleCheckpointBatches {
			select {
			case req := <-db.queue:
				db.batch(req)
				since++
				continue
			case <-db.quit:
				return
			default:
			}
			if !waited {
				waited = true
				wait.Reset(idleCheckpointWait)
				select {
				case req := <-db.queue:
					wait.Stop()
					db.batch(req)
					since++
					continue
				case <-wait.C:
				case <-db.quit:
					return
				}
			}
			db.checkpoint()
			since, waited = 0, false
		}
	}
}

// idleCheckpointWait is how long the writer waits for a write, once, before
// an idle checkpoint: long enough for the goroutines it made ready to run
// first, short beside the checkpoint itself.
const idleCheckpointWait = time.Millisecond

// testHookCheckpoint, nil outside tests, runs on the writer as a
// checkpoint starts.
var testHookCheckpoint func()

// idleCheckpointBatches is how many batches the writer commits before it
// checkpoints at its next idle moment: a few hundred pages, fewer than
// SQLite's automatic checkpoint waits for, so that it rarely comes first.
const idleCheckpointBatches = 32

// checkpoint copies what it can of the WAL into the database file
// (PRAGMA wal_checkpoint(PASSIVE): never waits for a reader) on the writer
// connection, between batches. No write waits on it, so a failure (an I/O
// error) is logged; SQLite's automatic checkpoint remains.
func (db *DB) checkpoint() {
	if testHookCheckpoint != nil {
		testHookCheckpoint()
	}
	conn, err := db.w.Conn(context.Background())
	if err == nil {
		_, err = conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		err = errors.Join(err, conn.Close())
	}
	if err != nil {
		db.log.Warn("checkpoint the WAL", "err", err)
		return
	}
	db.checkpoints.Add(1)
}

// batch runs first and every write that is waiting (up to the bounds) in
// one transaction, commits it, then publishes, wakes, answers, and hands the
// parked claims its writes took their tasks.
//
// The first write of a transaction runs without a savepoint (a lone write
// costs no more than before group commit): if it fails, the transaction,
// which holds nothing else, is rolled back and the next write starts a new
// one. Every later write runs in its own savepoint.
func (db *DB) batch(first *writeReq) {
	started := time.Now()
	// Busy counts up to the answers, so that a caller that has its answer
	// sees its batch counted (a write refused during the batch is answered
	// at once and may see it a moment later).
	spent := func() { db.busy.Add(int64(time.Since(started))) }
	var (
		conn   *sql.Conn // the writer connection while a transaction is open
		saves  *savepoints
		list   []pending // writes that succeeded in the transaction
		taken  int
		broken error // the transaction can no longer commit
	)
	for req := first; req != nil; {
		taken++
		switch {
		case req.ctx.Err() != nil:
			// Nothing of it was written, so it can be answered now.
			req.done <- fmt.Errorf("%s: %w", req.op, req.ctx.Err())
		case conn == nil:
			c, err := db.begin()
			if err != nil {
				req.done <- db.fail(req.op, err)
				break
			}
			t, err := db.runFirst(c, req)
			if err != nil {
				req.done <- err // runFirst rolled the transaction back and let c go
				break
			}
			conn, list = c, append(list, pending{req: req, t: t})
		default:
			var (
				t   *tx
				err error
			)
			if saves == nil {
				saves, broken = prepareSavepoints(conn)
				if broken != nil {
					req.done <- db.fail(req.op, broken)
					break
				}
			}
			t, err, broken = db.runSaved(conn, saves, req)
			if err != nil {
				req.done <- err
			} else {
				list = append(list, pending{req: req, t: t})
			}
		}
		if broken != nil || taken >= maxBatch || time.Since(started) >= maxBatchTime {
			break
		}
		select {
		case req = <-db.queue:
		default:
			req = db.joiner()
		}
	}
	if conn == nil {
		spent()
		return
	}
	if saves != nil {
		broken = errors.Join(broken, saves.close())
	}
	var (
		marks    commitMarks
		marksErr error
	)
	if broken == nil {
		marks, marksErr = readCommitMarks(conn)
		commit := time.Now()
		broken = db.end(conn, "COMMIT")
		db.committing.Add(int64(time.Since(commit)))
	} else {
		broken = errors.Join(broken, db.end(conn, "ROLLBACK"))
	}
	if broken != nil {
		spent()
		// Nothing of this transaction is in the database: every write that
		// had succeeded in it fails with the reason.
		for _, p := range list {
			db.abandoned(p.t)
			p.req.done <- db.fail(p.req.op, broken)
		}
		return
	}
	db.batches.Add(1)
	db.writes.Add(int64(len(list)))
	db.healthy.Store(true)
	db.observe(marks, marksErr) // before anyone is answered or woken
	if testHookCommitted != nil {
		testHookCommitted()
	}
	for _, p := range list {
		db.committed(p.t)
	}
	spent()
	for _, p := range list {
		p.req.done <- nil
	}
	// The claims handed a task go last: the goroutine made ready last runs
	// next on this processor, so a waiting claim answers first rather than
	// after every writer just answered (and whatever they run).
	for _, p := range list {
		for _, h := range p.t.handoffs {
			handed(h)
		}
	}
}

// joiner yields the writer's processor once, when no write is waiting, and
// returns a write that arrived meanwhile (nil if none did). Callers that are
// runnable then (their requests just read, or their previous writes just
// answered, and about to write again) reach the queue and join the open
// batch instead of each waiting for a batch of its own: its BEGIN, COMMIT
// and WAL pages are shared. With nothing else runnable the writer goes on
// at once, so a lone write is not delayed.
func (db *DB) joiner() *writeReq {
	runtime.Gosched()
	select {
	case req := <-db.queue:
		return req
	default:
		return nil
	}
}

// begin takes the writer connection and opens a BEGIN IMMEDIATE
// transaction on it. The writer drives the transaction with plain
// statements on a *sql.Conn rather than a *sql.Tx: database/sql gives every
// Tx, and every query inside one, a goroutine that waits for the context
// to end, which costs more than the statements themselves. Every statement
// runs with a context that never ends (see newTx), so none is started.
func (db *DB) begin() (*sql.Conn, error) {
	conn, err := db.w.Conn(context.Background())
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		return nil, errors.Join(fmt.Errorf("begin: %w", err), conn.Close())
	}
	return conn, nil
}

// end runs COMMIT or ROLLBACK and gives the connection back. A COMMIT that
// fails can leave the transaction open (SQLITE_BUSY), so it is rolled back:
// nothing of it stays in the database either way. A connection that may
// still be inside a transaction is thrown away (the next write opens a new
// one), so that it cannot refuse every later BEGIN.
func (db *DB) end(conn *sql.Conn, stmt string) error {
	_, err := conn.ExecContext(context.Background(), stmt)
	clean := err == nil // no transaction is left open on conn
	if err != nil {
		err = fmt.Errorf("%s: %w", strings.ToLower(stmt), err)
		if stmt == "COMMIT" {
			_, rbErr := conn.ExecContext(context.Background(), "ROLLBACK")
			clean = rbErr == nil || noTransaction(rbErr)
			if !clean {
				err = errors.Join(err, fmt.Errorf("rollback: %w", rbErr))
			}
		}
	}
	if !clean {
		// Discard the connection: database/sql closes one whose Raw call
		// answers driver.ErrBadConn.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	if cErr := conn.Close(); cErr != nil {
		err = errors.Join(err, fmt.Errorf("release writer connection: %w", cErr))
	}
	return err
}

// noTransaction reports SQLite's answer to a ROLLBACK with nothing open
// (a failed COMMIT may already have rolled back).
func noTransaction(err error) bool {
	return strings.Contains(err.Error(), "no transaction is active")
}

// pending is a write that succeeded in the open transaction.
type pending struct {
	req *writeReq
	t   *tx
}

// newTx is the state of one write in the open transaction, which must not
// be interrupted when one caller gives up (SQLite may roll back the whole
// transaction on an interrupt), so statements run without the caller's
// cancellation.
func (db *DB) newTx(conn *sql.Conn, req *writeReq) *tx {
	now := db.now().UTC()
	return &tx{ctx: context.WithoutCancel(req.ctx), tx: conn, db: db, now: now, ts: relay.FormatTime(now)}
}

// runFirst runs the first write of a fresh transaction. On failure it rolls
// the transaction back, gives the connection back and returns the write's
// error.
func (db *DB) runFirst(conn *sql.Conn, req *writeReq) (*tx, error) {
	t := db.newTx(conn, req)
	err := callFn(req.fn, t)
	if err == nil {
		return t, nil
	}
	db.abandoned(t)
	if rbErr := db.end(conn, "ROLLBACK"); rbErr != nil {
		return nil, db.fail(req.op, errors.Join(err, rbErr))
	}
	return nil, db.writeErr(req.op, err)
}

// savepoints are the SAVEPOINT and RELEASE statements of the writes after
// a batch's first, prepared once per batch on the writer connection: the
// driver compiles a statement without arguments again on every run (its
// statement cache takes only those with arguments), and these two run for
// every write but a batch's first.
type savepoints struct{ save, release *sql.Stmt }

// prepareSavepoints prepares the batch's savepoint statements on conn.
func prepareSavepoints(conn *sql.Conn) (*savepoints, error) {
	save, err := conn.PrepareContext(context.Background(), "SAVEPOINT w")
	if err != nil {
		return nil, fmt.Errorf("prepare savepoint: %w", err)
	}
	release, err := conn.PrepareContext(context.Background(), "RELEASE w")
	if err != nil {
		return nil, errors.Join(fmt.Errorf("prepare release savepoint: %w", err), save.Close())
	}
	return &savepoints{save: save, release: release}, nil
}

// close finalizes the statements, before the transaction ends.
func (s *savepoints) close() error {
	return errors.Join(s.save.Close(), s.release.Close())
}

// runSaved runs a later write of a batch in its own savepoint. It returns
// the write's state or its error, and broken when the savepoint could not
// be undone or released (the whole transaction is then lost).
func (db *DB) runSaved(conn *sql.Conn, saves *savepoints, req *writeReq) (t *tx, err, broken error) {
	t = db.newTx(conn, req)
	if _, err := saves.save.ExecContext(t.ctx); err != nil {
		broken = fmt.Errorf("savepoint: %w", err)
		return nil, db.fail(req.op, broken), broken
	}
	if err = callFn(req.fn, t); err == nil {
		if _, err := saves.release.ExecContext(t.ctx); err != nil {
			db.abandoned(t)
			broken = fmt.Errorf("release savepoint: %w", err)
			return nil, db.fail(req.op, broken), broken
		}
		return t, nil, nil
	}
	db.abandoned(t)
	if _, rbErr := conn.ExecContext(t.ctx, "ROLLBACK TO w; RELEASE w"); rbErr != nil {
		broken = fmt.Errorf("rollback to savepoint: %w", rbErr)
		return nil, db.fail(req.op, errors.Join(err, broken)), broken
	}
	return nil, db.writeErr(req.op, err), nil
}

// writeErr is a failed write's answer: a domain refusal as it is, anything
// else wrapped and counted against the store's health.
func (db *DB) writeErr(op string, err error) error {
	if relay.IsDomain(err) {
		return err
	}
	return db.fail(op, err)
}

// callFn runs fn, turning a panic into an error so that one bad write
// cannot take the writer goroutine (and every other caller) down.
func callFn(fn func(t *tx) error, t *tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in write: %v", r)
		}
	}()
	return fn(t)
}

// committed publishes a committed write's changes and wakes its waiters.
func (db *DB) committed(t *tx) {
	if len(t.agents) > 0 {
		db.presenceMu.Lock()
		for _, s := range t.agents {
			db.presence[s] = t.now
		}
		db.presenceMu.Unlock()
	}
	if len(t.changes) > 0 {
		db.broker.Publish(t.changes...)
	}
	if len(t.wake) > 0 {
		db.waiters.Wake(t.wake...)
	}
	for _, p := range t.parks {
		db.parking.park(p)
	}
	if t.walk.slug != "" && t.walk.to > db.walked[t.walk.slug] {
		db.walked[t.walk.slug] = t.walk.to
	}
}

// abandoned undoes what a write that is not committed promised in memory:
// the claims it took for its posted tasks wait again.
func (db *DB) abandoned(t *tx) {
	for _, h := range t.handoffs {
		db.parking.release(h.p)
	}
	t.handoffs = nil
}

// fail wraps a write failure and marks the store unhealthy, unless the
// caller gave up (context ended) or the store is closing.
func (db *DB) fail(op string, err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !db.closed.Load() {
		db.healthy.Store(false)
	}
	return fmt.Errorf("%s: %w", op, err)
}
