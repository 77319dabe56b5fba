package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

const taskColumns = `t.id, t.sender_slug, t.recipient_slug, t.title, t.instructions, t.required_capabilities, t.priority, t.status,
	t.created_at, t.updated_at, t.claimed_at, t.lease_expires_at, t.parent_task_id, t.depth, t.claimed_via,
	COALESCE(t.conversation_id, t.id), t.hops, t.target_session, t.reply_session`

// summaryColumns are the task columns of a TaskSummary plus its report count
// and latest report; use with summaryFrom.
const summaryColumns = `t.id, t.sender_slug, t.recipient_slug, t.title, t.required_capabilities, t.priority, t.status,
	t.created_at, t.updated_at, t.claimed_at, t.lease_expires_at, t.parent_task_id, t.depth, t.claimed_via,
	COALESCE(t.conversation_id, t.id), t.hops, t.target_session, t.reply_session,
	(SELECT COUNT(*) FROM reports c WHERE c.task_id = t.id), lr.kind, lr.message, lr.created_at`

const summaryFrom = ` FROM tasks t LEFT JOIN reports lr ON lr.rowid = (SELECT MAX(m.rowid) FROM reports m WHERE m.task_id = t.id)`

// taskScan receives a task's columns (taskColumns, or the first part of
// summaryColumns, which lacks the instructions) and converts the ones
// stored as text or NULL.
type taskScan struct {
	t                                 relay.Task
	caps, status                      string
	claimedAt, lease, parent, claimed sql.NullString
	target, reply                     sql.NullString
}

// dest returns the scan targets in column order; instructions says whether
// the columns hold t.instructions.
func (c *taskScan) dest(instructions bool) []any {
	d := []any{&c.t.ID, &c.t.SenderSlug, &c.t.RecipientSlug, &c.t.Title}
	if instructions {
		d = append(d, &c.t.Instructions)
	}
	return append(d, &c.caps, &c.t.Priority, &c.status,
		&c.t.CreatedAt, &c.t.UpdatedAt, &c.claimedAt, &c.lease, &c.parent, &c.t.Depth, &c.claimed,
		&c.t.ConversationID, &c.t.Hops, &c.target, &c.reply)
}

// task converts the scanned columns into the task.
func (c *taskScan) task() (relay.Task, error) {
	t := c.t
	t.Status = relay.TaskStatus(c.status)
	t.ClaimedAt, t.LeaseExpiresAt, t.ParentTaskID, t.ClaimedVia = c.claimedAt.String, c.lease.String, c.parent.String, c.claimed.String
	t.TargetSession, t.ReplySession = c.target.String, c.reply.String
	if c.caps == "[]" { // most tasks: capsJSON's empty list, no decoding
		t.RequiredCapabilities = []string{}
	} else if err := json.Unmarshal([]byte(c.caps), &t.RequiredCapabilities); err != nil {
		return t, fmt.Errorf("task %s capabilities: %w", t.ID, err)
	}
	if t.RequiredCapabilities == nil {
		t.RequiredCapabilities = []string{}
	}
	return t, nil
}

// scanTask reads one task's taskColumns from row.
func scanTask(row rowScanner) (relay.Task, error) {
	c := taskScans.Get().(*pooledTaskScan)
	defer taskScans.Put(c)
	c.t = relay.Task{}
	if err := row.Scan(c.dest...); err != nil {
		return relay.Task{}, err
	}
	return c.task()
}

// pooledTaskScan is a taskScan with its scan targets (taskColumns), kept
// in taskScans: every claim and report reads a task, and the targets point
// into the scan, so a fresh one is an allocation of both each time.
type pooledTaskScan struct {
	taskScan
	dest []any
}

var taskScans = sync.Pool{New: func() any {
	c := &pooledTaskScan{}
	c.dest = c.taskScan.dest(true)
	return c
}}

func scanSummary(row rowScanner) (relay.TaskSummary, error) {
	var (
		c                    taskScan
		count                int
		rKind, rMessage, rAt sql.NullString
	)
	if err := row.Scan(append(c.dest(false), &count, &rKind, &rMessage, &rAt)...); err != nil {
		return relay.TaskSummary{}, err
	}
	t, err := c.task()
	if err != nil {
		return relay.TaskSummary{}, err
	}
	s := summarize(t)
	s.ReportCount = count
	if rKind.Valid {
		s.LatestReport = &relay.ReportExcerpt{Kind: rKind.String, Message: excerpt(rMessage.String), CreatedAt: rAt.String}
	}
	return s, nil
}

// getTask loads a task with its reports in insertion order.
func getTask(ctx context.Context, q queryer, id string) (relay.Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, unknownTask(id)
	}
	if err != nil {
		return t, fmt.Errorf("get task: %w", err)
	}
	return t, loadReports(ctx, q, &t)
}

// loadReports reads the task's timeline into t.Reports. The task id is bound
// as +? so that the statement stays prepared (see limitSQL).
func loadReports(ctx context.Context, q queryer, t *relay.Task) error {
	reports, err := queryAll(ctx, q, "get task reports", scanReport,
		`SELECT id, kind, message, result, created_at FROM reports WHERE task_id = +? ORDER BY rowid`, t.ID)
	if err != nil {
		return err
	}
	t.Reports = reports
	return nil
}

func scanReport(row rowScanner) (relay.Report, error) {
	var (
		r      relay.Report
		result sql.NullString
	)
	err := row.Scan(&r.ID, &r.Kind, &r.Message, &result, &r.CreatedAt)
	r.Result = result.String
	return r, err
}
