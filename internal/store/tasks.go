package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

const taskColumns = `t.id, t.sender_slug, t.recipient_slug, t.title, t.instructions, t.required_capabilities, t.priority, t.status,
	t.created_at, t.updated_at, t.claimed_at, t.lease_expires_at, t.parent_task_id, t.depth, t.claimed_via,
	COALESCE(t.conversation_id, t.id), t.hops, t.target_session`

// summaryColumns are the task columns of a TaskSummary plus its report count
// and latest report; use with summaryFrom.
const summaryColumns = `t.id, t.sender_slug, t.recipient_slug, t.title, t.required_capabilities, t.priority, t.status,
	t.created_at, t.updated_at, t.claimed_at, t.lease_expires_at, t.parent_task_id, t.depth, t.claimed_via,
	COALESCE(t.conversation_id, t.id), t.hops, t.target_session,
	(SELECT COUNT(*) FROM reports c WHERE c.task_id = t.id), lr.kind, lr.message, lr.created_at`

const summaryFrom = ` FROM tasks t LEFT JOIN reports lr ON lr.rowid = (SELECT MAX(m.rowid) FROM reports m WHERE m.task_id = t.id)`

// excerptLen is the longest latest-report message on a summary, in characters.
const excerptLen = 280

// viaDashboard marks text written by the operator on an agent's behalf.
const viaDashboard = " (via dashboard)"

// taskScan receives a task's columns (taskColumns, or the first part of
// summaryColumns, which lacks the instructions) and converts the ones
// stored as text or NULL.
type taskScan struct {
	t                                 relay.Task
	caps, status                      string
	claimedAt, lease, parent, claimed sql.NullString
	target                            sql.NullString
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
		&c.t.ConversationID, &c.t.Hops, &c.target)
}

// task converts the scanned columns into the task.
func (c *taskScan) task() (relay.Task, error) {
	t := c.t
	t.Status = relay.TaskStatus(c.status)
	t.ClaimedAt, t.LeaseExpiresAt, t.ParentTaskID, t.ClaimedVia = c.claimedAt.String, c.lease.String, c.parent.String, c.claimed.String
	t.TargetSession = c.target.String
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

// excerpt collapses whitespace and cuts s to excerptLen characters (279 and "…").
func excerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= excerptLen {
		return s
	}
	r := []rune(s)
	return string(r[:excerptLen-1]) + "…"
}

// summarize derives a task's summary from the full task.
func summarize(t relay.Task) relay.TaskSummary {
	s := relay.TaskSummary{
		ID: t.ID, SenderSlug: t.SenderSlug, RecipientSlug: t.RecipientSlug, Title: t.Title,
		RequiredCapabilities: t.RequiredCapabilities, Priority: t.Priority, Status: t.Status,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ClaimedAt: t.ClaimedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		ParentTaskID: t.ParentTaskID, Depth: t.Depth, ConversationID: t.ConversationID, Hops: t.Hops,
		TargetSession: t.TargetSession, ClaimedVia: t.ClaimedVia, ReportCount: len(t.Reports),
	}
	if n := len(t.Reports); n > 0 {
		r := t.Reports[n-1]
		s.LatestReport = &relay.ReportExcerpt{Kind: r.Kind, Message: excerpt(r.Message), CreatedAt: r.CreatedAt}
	}
	return s
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

// byOperator appends " (via dashboard)" to text when the operator acts on an
// agent's behalf.
func byOperator(ctx context.Context, text string) string {
	if relay.IsByOperator(ctx) {
		return text + viaDashboard
	}
	return text
}

// chainLimit reads the hand-off depth limit from settings.
func chainLimit(ctx context.Context, q queryer) (int, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, keyChainMaxDepth).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.DefaultChainLimit, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read chain limit: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("read chain limit: setting %s = %q: %w", keyChainMaxDepth, v, err)
	}
	return n, nil
}

// checkHops refuses a hand-off that would take conversation conv to hops
// hand-offs from its first task when the hand-off limit is lower.
func checkHops(t *tx, hops int, conv string) error {
	limit, err := chainLimit(t.ctx, t.tx)
	if err != nil {
		return err
	}
	if hops <= limit {
		return nil
	}
	return relay.Errorf(relay.EChainLimit,
		"This task would be %d hand-offs away from the person who started the work (conversation %s), and the limit is %d. Do the work yourself, or answer BLOCKED: with what you need.",
		hops, conv, limit).WithDetails(map[string]any{"depth": hops, "limit": limit, "conversationId": conv})
}

// PostTask queues a task for its recipient and wakes the recipient's waiting claims.
func (db *DB) PostTask(ctx context.Context, in relay.PostTaskInput) (relay.Task, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Task{}, err
	}
	in.Title, in.Instructions = db.scrub(in.Title), db.scrub(in.Instructions)
	var out relay.Task
	err = db.write(ctx, "post task", func(t *tx) error {
		// touch refuses an unknown sender (unknown_agent); if a later check
		// fails, the savepoint undoes it.
		if err := t.touch(in.SenderSlug); err != nil {
			return err
		}
		if err := checkOpenTasks(t, in.SenderSlug); err != nil {
			return err
		}
		recipient, err := getAgent(t.ctx, t.tx, in.RecipientSlug, t.now)
		if err != nil {
			return err
		}
		id := relay.NewID()
		depth, hops, conv := 0, 0, id
		if in.ParentTaskID != "" {
			parent, err := getTask(t.ctx, t.tx, in.ParentTaskID)
			if err != nil {
				return err
			}
			if parent.SenderSlug != in.SenderSlug && parent.RecipientSlug != in.SenderSlug {
				return relay.Errorf(relay.ETaskAccessDenied, "A task can only be linked to a task you sent or received.")
			}
			depth, hops, conv = parent.Depth+1, parent.Hops+1, parent.ConversationID
			if in.FromAgent {
				if err := checkHops(t, hops, conv); err != nil {
					return err
				}
			}
		}
		if missing := missingCapabilities(recipient.Capabilities, in.RequiredCapabilities); len(missing) > 0 {
			return relay.Errorf(relay.ERecipientLacksCapability, "Cannot assign to %s: it does not advertise %s.",
				recipient.Slug, strings.Join(missing, ", ")).WithDetails(map[string]any{"missingCapabilities": missing})
		}
		var convCol any // NULL: the task starts its own conversation
		if conv != id {
			convCol = conv
		}
		if _, err := t.exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status,
				created_at, updated_at, parent_task_id, depth, conversation_id, hops, target_session)
			VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)`,
			id, in.SenderSlug, in.RecipientSlug, in.Title, in.Instructions, capsJSON(in.RequiredCapabilities), in.Priority,
			t.ts, t.ts, nullString(in.ParentTaskID), depth, convCol, hops, nullString(in.TargetSession)); err != nil {
			return fmt.Errorf("insert task: %w", err)
		}
		// The answer is the row just inserted; no need to read it back.
		caps := append([]string{}, in.RequiredCapabilities...)
		out = relay.Task{ID: id, SenderSlug: in.SenderSlug, RecipientSlug: in.RecipientSlug, Title: in.Title,
			Instructions: in.Instructions, RequiredCapabilities: caps, Priority: in.Priority, Status: relay.StatusQueued,
			CreatedAt: t.ts, UpdatedAt: t.ts, ParentTaskID: in.ParentTaskID, Depth: depth,
			ConversationID: conv, Hops: hops, TargetSession: in.TargetSession, Reports: []relay.Report{}}
		t.taskKnown(out)
		return t.handOff(out)
	})
	return out, err
}

// handOff gives a task just posted to the oldest claim waiting for it
// (handoff.go): claimed in this transaction for that claim, whose agent
// is present now, and handed to it after the commit. With no such claim
// the recipient's waiting claims are woken to look for it.
func (t *tx) handOff(task relay.Task) error {
	p := t.db.parking.take(task.RecipientSlug, task.SenderSlug, task.TargetSession)
	if p == nil {
		t.wakeUp(task.RecipientSlug)
		return nil
	}
	t.handoffs = append(t.handoffs, handoff{p: p}) // released if this write fails
	claimed, err := t.claim(p.c, task)
	if err != nil {
		return err
	}
	t.handoffs[len(t.handoffs)-1].task = claimed
	return t.present(task.RecipientSlug)
}

func missingCapabilities(have, need []string) []string {
	set := make(map[string]bool, len(have))
	for _, c := range have {
		set[c] = true
	}
	var missing []string
	for _, c := range need {
		if !set[c] {
			missing = append(missing, c)
		}
	}
	return missing
}

// taskAction loads task taskID inside a write and runs act on it with who
// normalized (act refuses the task or changes it), then refreshes who's
// presence and answers with what answer makes of the task.
func (db *DB) taskAction(ctx context.Context, op, field, who, taskID string,
	act func(t *tx, who string, task *relay.Task) error, answer func(t *tx, task relay.Task) (relay.Task, error)) (relay.Task, error) {
	who, err := relay.NormalizeSlug(field, who)
	if err != nil {
		return relay.Task{}, err
	}
	if taskID, err = relay.TaskID("taskId", taskID); err != nil {
		return relay.Task{}, err
	}
	var out relay.Task
	err = db.write(ctx, op, func(t *tx) error {
		task, err := getTask(t.ctx, t.tx, taskID)
		if err != nil {
			return err
		}
		if err := act(t, who, &task); err != nil {
			return err
		}
		if err := t.touch(who); err != nil {
			return err
		}
		out, err = answer(t, task)
		return err
	})
	return out, err
}

// holderAction runs fn on a task that reporter currently holds (recipient,
// status claimed), then refreshes reporter's presence and publishes the task.
// fn keeps task in step with what it writes (fields and reports), so the
// answer needs no re-read.
func (db *DB) holderAction(ctx context.Context, op, reporter, taskID string, fn func(t *tx, task *relay.Task) error) (relay.Task, error) {
	return db.taskAction(ctx, op, "reporterSlug", reporter, taskID, func(t *tx, reporter string, task *relay.Task) error {
		if task.RecipientSlug != reporter || task.Status != relay.StatusClaimed {
			return relay.Errorf(relay.ETaskUpdateDenied, "Only the recipient that currently holds a claimed task may update it.").
				WithDetails(map[string]any{"taskStatus": string(task.Status)})
		}
		return fn(t, task)
	}, func(t *tx, task relay.Task) (relay.Task, error) {
		t.taskKnown(task)
		return task, nil
	})
}

// RenewLease extends the lease of a claimed task by leaseSeconds from now.
// It writes no event.
func (db *DB) RenewLease(ctx context.Context, reporter, taskID string, leaseSeconds int) (relay.Task, error) {
	secs, err := relay.LeaseSeconds("leaseSeconds", leaseSeconds)
	if err != nil {
		return relay.Task{}, err
	}
	return db.holderAction(ctx, "renew lease", reporter, taskID, func(t *tx, task *relay.Task) error {
		lease := relay.FormatTime(t.now.Add(time.Duration(secs) * time.Second))
		if _, err := t.exec(`UPDATE tasks SET lease_expires_at = ?, updated_at = ? WHERE id = ?`, lease, t.ts, task.ID); err != nil {
			return fmt.Errorf("update lease: %w", err)
		}
		task.LeaseExpiresAt, task.UpdatedAt = lease, t.ts
		return nil
	})
}

// ReportTask adds progress, or completes or blocks the task, and tells the sender.
func (db *DB) ReportTask(ctx context.Context, in relay.ReportInput) (relay.Task, error) {
	in, err := in.Validate()
	if err != nil {
		return relay.Task{}, err
	}
	in.Message, in.Result = db.scrub(in.Message), db.scrub(in.Result)
	return db.holderAction(ctx, "report task", in.ReporterSlug, in.TaskID, func(t *tx, task *relay.Task) error {
		var (
			q   string
			typ string
		)
		switch in.Kind {
		case relay.ReportProgress:
			q, typ = `UPDATE tasks SET updated_at = ? WHERE id = ?`, relay.EventTaskProgress
		case relay.ReportCompleted:
			q, typ = `UPDATE tasks SET status = 'completed', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, relay.EventTaskCompleted
			task.Status, task.LeaseExpiresAt = relay.StatusCompleted, ""
		case relay.ReportBlocked:
			q, typ = `UPDATE tasks SET status = 'blocked', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, relay.EventTaskBlocked
			task.Status, task.LeaseExpiresAt = relay.StatusBlocked, ""
		}
		if _, err := t.exec(q, t.ts, task.ID); err != nil {
			return fmt.Errorf("update task: %w", err)
		}
		task.UpdatedAt = t.ts
		if err := t.addReport(task, in.Kind, in.Message, in.Result); err != nil {
			return err
		}
		// task.Reports is the whole timeline (read in this transaction), so
		// the cap has work to do only past MaxProgressReports.
		if in.Kind == relay.ReportProgress && progressReports(task.Reports) > MaxProgressReports {
			if err := capProgress(t, task.ID); err != nil {
				return err
			}
			// The cap deleted the oldest; read the timeline as it is now.
			if err := loadReports(t.ctx, t.tx, task); err != nil {
				return err
			}
		}
		return t.event(task.SenderSlug, typ, task.ID, task.RecipientSlug+": "+in.Message)
	})
}

// progressReports counts the progress reports in a timeline.
func progressReports(rs []relay.Report) int {
	n := 0
	for _, r := range rs {
		if r.Kind == relay.ReportProgress {
			n++
		}
	}
	return n
}

// ReleaseTask gives a claimed task back to the queue and tells the sender.
func (db *DB) ReleaseTask(ctx context.Context, reporter, taskID, reason string) (relay.Task, error) {
	reason, err := relay.Text("reason", reason, 1, relay.MaxLongText)
	if err != nil {
		return relay.Task{}, err
	}
	reason = byOperator(ctx, reason)
	return db.holderAction(ctx, "release task", reporter, taskID, func(t *tx, task *relay.Task) error {
		if err := requeue(t, task.ID); err != nil {
			return err
		}
		task.Status, task.ClaimedAt, task.ClaimedVia, task.LeaseExpiresAt, task.UpdatedAt = relay.StatusQueued, "", "", "", t.ts
		if err := t.addReport(task, relay.ReportProgress, "Released: "+reason, ""); err != nil {
			return err
		}
		t.wakeUp(task.RecipientSlug)
		return t.event(task.SenderSlug, relay.EventTaskRequeued, task.ID,
			fmt.Sprintf("%s released “%s”: %s", task.RecipientSlug, task.Title, reason))
	})
}

// requeue puts a task back in its recipient's queue, clearing the claim.
func requeue(t *tx, id string) error {
	if _, err := t.exec(`UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL, updated_at = ?
		WHERE id = ?`, t.ts, id); err != nil {
		return fmt.Errorf("requeue task: %w", err)
	}
	return nil
}

// GetTask returns a task to its sender or recipient and refreshes the
// requester's presence.
func (db *DB) GetTask(ctx context.Context, requester, taskID string) (relay.Task, error) {
	return db.taskAction(ctx, "get task", "requesterSlug", requester, taskID, func(_ *tx, requester string, task *relay.Task) error {
		if task.SenderSlug != requester && task.RecipientSlug != requester {
			return relay.Errorf(relay.ETaskAccessDenied, "Only the task sender or recipient can read this task.")
		}
		return nil
	}, func(_ *tx, task relay.Task) (relay.Task, error) {
		return task, nil
	})
}

// senderRule is one thing the sender of a task can do to it with a note:
// who is refused, which statuses allow it and what it writes.
type senderRule struct {
	op      string
	field   string // the note's name in errors: "reason" or "note"
	denied  *relay.Error
	allowed func(relay.TaskStatus) *relay.Error
	apply   func(t *tx, task relay.Task, note string) error
}

// senderAction checks note, runs r.apply on a task sent by sender whose
// status r.allowed passes, then refreshes sender's presence and publishes
// the task.
func (db *DB) senderAction(ctx context.Context, sender, taskID, note string, r senderRule) (relay.Task, error) {
	note, err := relay.Text(r.field, note, 1, relay.MaxLongText)
	if err != nil {
		return relay.Task{}, err
	}
	note = byOperator(ctx, note)
	return db.taskAction(ctx, r.op, "senderSlug", sender, taskID, func(t *tx, sender string, task *relay.Task) error {
		if task.SenderSlug != sender {
			return r.denied
		}
		if e := r.allowed(task.Status); e != nil {
			return e.WithDetails(map[string]any{"status": string(task.Status)})
		}
		return r.apply(t, *task, note)
	}, func(t *tx, task relay.Task) (relay.Task, error) {
		return t.taskChanged(task.ID)
	})
}

// onlyStatus allows one status and refuses any other with the message
// format, which gets the status.
func onlyStatus(want relay.TaskStatus, format string) func(relay.TaskStatus) *relay.Error {
	return func(s relay.TaskStatus) *relay.Error {
		if s == want {
			return nil
		}
		return relay.Errorf(relay.EInvalidTaskState, format, s)
	}
}

// reopenHop counts a task sent back to work from inside a worker run (a run
// token's request_changes or requeue_task) as a hand-off of the run's
// conversation: a task of that conversation goes to at least one hop past
// the run's task, and past the hand-off limit it is refused with
// chain_limit. Without it, two runs could reopen and re-post to each other
// forever, each new task one hop from a task that never gets further.
func reopenHop(t *tx, task relay.Task) error {
	p, ok := relay.PrincipalFrom(t.ctx)
	if !ok || p.RunTaskID == "" {
		return nil
	}
	var conv string
	var hops int
	if err := t.tx.QueryRowContext(t.ctx, `SELECT COALESCE(conversation_id, id), hops FROM tasks WHERE id = ?`, p.RunTaskID).Scan(&conv, &hops); err != nil {
		return fmt.Errorf("read the run's task: %w", err)
	}
	if conv != task.ConversationID || hops+1 <= task.Hops {
		return nil
	}
	if err := checkHops(t, hops+1, conv); err != nil {
		return err
	}
	if _, err := t.exec(`UPDATE tasks SET hops = ? WHERE id = ?`, hops+1, task.ID); err != nil {
		return fmt.Errorf("count the hop: %w", err)
	}
	return nil
}

// requeueWith puts the task back in its recipient's queue with a report of
// kind (its text made by message) and tells the recipient with the
// summary format, which gets the sender, the title and the note.
func requeueWith(kind string, message func(task relay.Task, note string) string, summary string) func(t *tx, task relay.Task, note string) error {
	return func(t *tx, task relay.Task, note string) error {
		if err := reopenHop(t, task); err != nil {
			return err
		}
		if err := requeue(t, task.ID); err != nil {
			return err
		}
		if err := t.report(task.ID, kind, message(task, note), ""); err != nil {
			return err
		}
		t.wakeUp(task.RecipientSlug)
		return t.event(task.RecipientSlug, relay.EventTaskRequeued, task.ID,
			fmt.Sprintf(summary, task.SenderSlug, task.Title, note))
	}
}

// CancelTask cancels an open task, records why on its timeline and tells the
// recipient. It wakes no waiting claim.
func (db *DB) CancelTask(ctx context.Context, sender, taskID, reason string) (relay.Task, error) {
	return db.senderAction(ctx, sender, taskID, reason, senderRule{
		op:     "cancel task",
		field:  "reason",
		denied: relay.Errorf(relay.ETaskCancelDenied, "Only the task sender can cancel this task."),
		allowed: func(s relay.TaskStatus) *relay.Error {
			if s.Open() {
				return nil
			}
			return relay.Errorf(relay.EInvalidTaskState, "A %s task cannot be cancelled.", s)
		},
		apply: func(t *tx, task relay.Task, reason string) error {
			if _, err := t.exec(`UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, t.ts, task.ID); err != nil {
				return fmt.Errorf("cancel task: %w", err)
			}
			if err := t.report(task.ID, relay.ReportProgress, fmt.Sprintf("Cancelled by %s: %s", task.SenderSlug, reason), ""); err != nil {
				return err
			}
			return t.event(task.RecipientSlug, relay.EventTaskCancelled, task.ID,
				fmt.Sprintf("%s cancelled “%s”: %s", task.SenderSlug, task.Title, reason))
		},
	})
}

// RequeueTask sends a blocked task back to its recipient's queue.
func (db *DB) RequeueTask(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, sender, taskID, note, senderRule{
		op:      "requeue task",
		field:   "note",
		denied:  relay.Errorf(relay.ETaskRequeueDenied, "Only the task sender can requeue this task."),
		allowed: onlyStatus(relay.StatusBlocked, "Only a blocked task can be requeued; this one is %s."),
		apply: requeueWith(relay.ReportProgress, func(task relay.Task, note string) string {
			return fmt.Sprintf("Requeued by %s: %s", task.SenderSlug, note)
		}, "%s requeued “%s”: %s"),
	})
}

// RequestChanges reopens a completed task with the sender's note; the task
// keeps its id and history.
func (db *DB) RequestChanges(ctx context.Context, sender, taskID, note string) (relay.Task, error) {
	return db.senderAction(ctx, sender, taskID, note, senderRule{
		op:      "request changes",
		field:   "note",
		denied:  relay.Errorf(relay.ETaskChangesDenied, "Only the task sender can ask for changes."),
		allowed: onlyStatus(relay.StatusCompleted, "Changes can be asked for on a completed task; this one is %s."),
		apply: requeueWith(relay.ReportChanges, func(_ relay.Task, note string) string {
			return note
		}, "%s asked for changes to “%s”: %s"),
	})
}

// Task returns any task without an access check or presence change.
func (db *DB) Task(ctx context.Context, taskID string) (relay.Task, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.Task{}, err
	}
	var out relay.Task
	err = db.read(ctx, "get task", func(tx *sql.Tx) error {
		out, err = getTask(ctx, tx, taskID)
		return err
	})
	return out, err
}

// escapeLike escapes LIKE wildcards with a backslash.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// ListTasks returns task summaries ordered by updatedAt, newest first.
func (db *DB) ListTasks(ctx context.Context, f relay.TaskFilter) ([]relay.TaskSummary, error) {
	var (
		where []string
		args  []any
	)
	if len(f.Statuses) > 0 {
		marks := make([]string, len(f.Statuses))
		for i, s := range f.Statuses {
			if !s.Valid() {
				return nil, relay.Errorf(relay.EInvalidRequest, "status: %q is not a task status.", s)
			}
			marks[i] = "?"
			args = append(args, string(s))
		}
		where = append(where, "t.status IN ("+strings.Join(marks, ", ")+")")
	}
	if a := strings.ToLower(strings.TrimSpace(f.Agent)); a != "" {
		// Bound as +? so that the statement stays prepared (see limitSQL).
		where = append(where, "(t.sender_slug = +? OR t.recipient_slug = +?)")
		args = append(args, a, a)
	}
	if q := strings.TrimSpace(f.Query); q != "" {
		where = append(where, `t.title LIKE ? ESCAPE '\'`)
		args = append(args, "%"+escapeLike(q)+"%")
	}
	query := `SELECT ` + summaryColumns + summaryFrom
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY t.updated_at DESC, t.rowid DESC" + limitSQL(relay.Clamp(f.Limit, relay.DefaultTaskLimit, 1, relay.MaxListLimit))
	return listSummaries(ctx, db.r, "list tasks", query, args...)
}

func listSummaries(ctx context.Context, q queryer, op, query string, args ...any) ([]relay.TaskSummary, error) {
	return queryAll(ctx, q, op, scanSummary, query, args...)
}

// RelatedTasks returns the task a task was handed off from and the tasks
// handed off from it, oldest first.
func (db *DB) RelatedTasks(ctx context.Context, taskID string) (relay.RelatedTasks, error) {
	taskID, err := relay.TaskID("taskId", taskID)
	if err != nil {
		return relay.RelatedTasks{}, err
	}
	var out relay.RelatedTasks
	err = db.read(ctx, "related tasks", func(tx *sql.Tx) error {
		var parent sql.NullString
		err := tx.QueryRowContext(ctx, `SELECT parent_task_id FROM tasks WHERE id = ?`, taskID).Scan(&parent)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownTask(taskID)
		}
		if err != nil {
			return fmt.Errorf("related tasks: %w", err)
		}
		if parent.Valid {
			ps, err := listSummaries(ctx, tx, "related tasks", `SELECT `+summaryColumns+summaryFrom+` WHERE t.id = ?`, parent.String)
			if err != nil {
				return err
			}
			if len(ps) == 1 {
				out.Parent = &ps[0]
			}
		}
		out.Children, err = listSummaries(ctx, tx, "related tasks",
			`SELECT `+summaryColumns+summaryFrom+` WHERE t.parent_task_id = ? ORDER BY t.created_at, t.rowid`, taskID)
		return err
	})
	if err != nil {
		return relay.RelatedTasks{}, err
	}
	return out, nil
}
