package store

import (
	"context"
	"database/sql"
)

// commitMarks are what the writer reads inside every transaction it
// commits, in one statement: the auth epoch (authcache.go) and the mesh
// outbox's head (OutboxHead). Read there, they are exactly what the commit
// leaves, whichever write (or trigger) moved them.
type commitMarks struct {
	authEpoch  int64
	outboxHead int64
}

// outboxHeadSQL is the outbox's head: its AUTOINCREMENT counter, 0 before
// the first outbox row (sqlite_sequence has no row for it until then).
const outboxHeadSQL = `coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'mesh_outbox'), 0)`

// commitMarksSQL reads the marks: the one row of auth_epoch, and the
// outbox's head.
const commitMarksSQL = `SELECT n, ` + outboxHeadSQL + ` FROM auth_epoch`

// readCommitMarks reads the marks inside the writer's open transaction.
func readCommitMarks(conn *sql.Conn) (commitMarks, error) {
	var m commitMarks
	err := conn.QueryRowContext(context.Background(), commitMarksSQL).Scan(&m.authEpoch, &m.outboxHead)
	return m, err
}

// observe is called by the writer after a commit with the marks read
// inside it (or the error reading them), before anyone is answered or
// woken: the auth cache starts a new generation when the epoch moved, and
// OutboxHead answers with the new head, or from the database when it could
// not be read.
func (db *DB) observe(m commitMarks, err error) {
	db.auth.observe(m.authEpoch, err)
	if err != nil {
		db.outboxHead.Store(-1)
		return
	}
	db.outboxHead.Store(m.outboxHead)
}
