package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// leaseExpiredReport is the timeline entry of a lease-expiry requeue.
const leaseExpiredReport = "Lease expired; task returned to the recipient queue."

// ClaimNext claims the recipient's most urgent, oldest queued task (from
// in.FromSenders only, when set), waiting up to in.Wait for one. Waiting is
// in-process: post, release, requeue, request changes, an invite's first
// task and lease-expiry requeues wake it; nothing polls the database. It
// returns nil when no task came in time, when ctx ends or when the store
// closes.
func (db *DB) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	if in.Wait <= 0 { // one attempt, nothing to wait for
		task, _, err := db.StartClaim(ctx, in, nil)
		return task, err
	}
	answer := make(chan claimOutcome, 1)
	task, waiting, err := db.StartClaim(ctx, in, func(t *relay.Task, err error) { answer <- claimOutcome{t, err} })
	if !waiting {
		return task, err
	}
	o := <-answer
	return o.task, o.err
}

// claimOutcome is what a claim that waited returns.
type claimOutcome struct {
	task *relay.Task
	err  error
}

// StartClaim is ClaimNext without a goroutine held while the claim waits
// (relay.ClaimStarter): the first attempt runs on the caller's goroutine;
// a claim that waits is a parked record (handoff.go) with a timer, a
// function the next wake-up of its recipient calls and one ctx's end
// calls. Whichever comes first ends the wait on a goroutine of its own,
// which answers done or, woken, tries again.
func (db *DB) StartClaim(ctx context.Context, in relay.ClaimInput, done func(*relay.Task, error)) (*relay.Task, bool, error) {
	c, err := newClaimRequest(in)
	if err != nil {
		return nil, false, err
	}
	w := &claimWait{db: db, ctx: ctx, c: c, deadline: time.Now().Add(max(in.Wait, 0)), done: done}
	return w.attempt()
}

// newClaimRequest checks and normalizes a claim's input.
func newClaimRequest(in relay.ClaimInput) (claimRequest, error) {
	recipient, err := relay.NormalizeSlug("recipientSlug", in.RecipientSlug)
	if err != nil {
		return claimRequest{}, err
	}
	lease, err := relay.LeaseSeconds("leaseSeconds", in.LeaseSeconds)
	if err != nil {
		return claimRequest{}, err
	}
	via := in.Via
	switch via {
	case "":
		via = relay.ViaChat
	case relay.ViaChat, relay.ViaWorker:
	default:
		return claimRequest{}, relay.Errorf(relay.EInvalidRequest, "via: must be %q or %q.", relay.ViaChat, relay.ViaWorker)
	}
	var senders []string
	if in.FromSenders != nil {
		senders = make([]string, 0, len(in.FromSenders))
		for _, s := range in.FromSenders {
			n, err := relay.NormalizeSlug("fromSenders", s)
			if err != nil {
				return claimRequest{}, err
			}
			senders = append(senders, n)
		}
	}
	claim := claimRequest{recipient: recipient, lease: time.Duration(lease) * time.Second, via: via, senders: senders, filter: in.FromSenders != nil,
		leaveLive: in.LeaveLiveSessions}
	if claim.session, err = relay.LiveSessionID("session", in.Session); err != nil {
		return claimRequest{}, err
	}
	if in.ForSessions != nil {
		claim.sessions = append([]string{""}, in.ForSessions...)
	}
	return claim, nil
}

// claimWait is one claim that may wait, from its first attempt to its
// answer.
type claimWait struct {
	db       *DB
	ctx      context.Context
	c        claimRequest
	deadline time.Time
	done     func(*relay.Task, error)
}

// Why a parked claim's wait ended.
const (
	endWoken  = iota + 1 // its recipient was woken: try again
	endHanded            // a post handed it a task
	endTime              // its wait is up
	endCtx               // its caller left, or the relay is stopping
)

// attempt makes one claim attempt. It returns the outcome with waiting
// false, or parks the claim and returns waiting true: w.done then gets the
// outcome.
func (w *claimWait) attempt() (*relay.Task, bool, error) {
	db := w.db
	if db.closed.Load() || w.ctx.Err() != nil {
		return nil, false, nil
	}
	remaining := time.Until(w.deadline)
	if remaining <= 0 {
		task, err := db.tryClaim(w.ctx, w.c, nil)
		return w.outcome(task, err)
	}
	r := &claimRound{w: w, p: newParked(w.c)}
	r.p.notify = func() { r.fire(endHanded) }
	// Before the attempt, so that a task queued after it wakes the claim.
	r.unwatch = db.waiters.Notify(w.c.recipient, func() { r.fire(endWoken) })
	task, err := db.tryClaim(w.ctx, w.c, r.p)
	if err != nil || task != nil {
		r.unwatch()
		return w.outcome(task, err)
	}
	r.arm()
	return nil, true, nil
}

// outcome is an attempt's answer: an error while the store closes or the
// caller goes is no error, only no task.
func (w *claimWait) outcome(task *relay.Task, err error) (*relay.Task, bool, error) {
	if err != nil && (w.db.closed.Load() || w.ctx.Err() != nil) {
		return nil, false, nil
	}
	return task, false, err
}

// claimRound is one wait of a parked claim: its first end (fire) wins.
type claimRound struct {
	w       *claimWait
	p       *parked
	unwatch func() bool

	mu    sync.Mutex
	why   int         // the first end; 0 while waiting
	armed bool        // the timer and ctx are watched: an end starts finish
	timer *time.Timer // the wait's end
	stop  func() bool // stops watching ctx
}

// arm starts the round's timer (the wait's end, after the attempt that
// just ran) and watches its ctx, unless it has already ended (woken while
// the attempt ran), in which case it finishes now.
func (r *claimRound) arm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.why != 0 {
		go r.finish()
		return
	}
	r.timer = time.AfterFunc(time.Until(r.w.deadline), func() { r.fire(endTime) })
	r.stop = context.AfterFunc(r.w.ctx, func() { r.fire(endCtx) })
	r.armed = true
}

// fire ends the round for why, unless it has ended already. It is called
// by the writer (wake-up, hand-off), a timer or ctx's end, and must not
// block.
func (r *claimRound) fire(why int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.why != 0 {
		return
	}
	r.why = why
	if r.armed {
		go r.finish()
	}
}

// finish ends the round: it stops what it watched, leaves the parking and
// answers, or tries again when woken.
func (r *claimRound) finish() {
	r.mu.Lock()
	why, timer, stop := r.why, r.timer, r.stop
	r.mu.Unlock()
	if timer != nil {
		timer.Stop()
	}
	if stop != nil {
		stop()
	}
	r.unwatch()
	w := r.w
	// A post may have taken the claim meanwhile: its task is ours.
	if t := w.db.parking.leave(r.p); t != nil {
		w.done(t, nil)
		return
	}
	if why != endWoken {
		w.done(nil, nil)
		return
	}
	if task, waiting, err := w.attempt(); !waiting {
		w.done(task, err)
	}
}

type claimRequest struct {
	recipient string
	lease     time.Duration
	via       string
	senders   []string
	filter    bool // senders applies (an empty list claims nothing)
	// sessions, when set, are the target sessions a claimed task may name
	// ("" for none): a session worker's.
	sessions []string
	// session is the live session claiming, "" for none (claim_session).
	session string
	// leaveLive skips tasks aimed at a live session of the recipient.
	leaveLive bool
}

// tryClaim is one claim attempt in one transaction: requeue the recipient's
// expired leases, refresh its presence, claim the next task. When there is
// none and p is set, p is parked after the commit, so that a later post can
// hand it its task (handoff.go).
func (db *DB) tryClaim(ctx context.Context, c claimRequest, p *parked) (*relay.Task, error) {
	var out *relay.Task
	err := db.write(ctx, "claim task", func(t *tx) error {
		if _, err := requeueExpired(t, c.recipient); err != nil {
			return err
		}
		if err := t.touch(c.recipient); err != nil {
			return err
		}
		if c.filter && len(c.senders) == 0 {
			return nil
		}
		query := nextQueuedSQL
		args := []any{c.recipient}
		if c.filter {
			query += ` AND t.sender_slug IN (?` + strings.Repeat(", ?", len(c.senders)-1) + `)`
			for _, s := range c.senders {
				args = append(args, s)
			}
		}
		if c.sessions != nil {
			query += ` AND COALESCE(t.target_session, '') IN (?` + strings.Repeat(", ?", len(c.sessions)-1) + `)`
			for _, s := range c.sessions {
				args = append(args, s)
			}
		}
		if c.leaveLive {
			query += leaveLiveSQL
			args = append(args, relay.FormatTime(t.now.Add(-relay.LiveSessionRetention)))
		}
		query += nextQueuedOrder
		task, err := scanTask(t.tx.QueryRowContext(t.ctx, query, args...))
		if errors.Is(err, sql.ErrNoRows) {
			if p != nil {
				t.parks = append(t.parks, p)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("find next task: %w", err)
		}
		// The row is known; only its timeline is read.
		if err := loadReports(t.ctx, t.tx, &task); err != nil {
			return err
		}
		if task, err = t.claim(c, task); err != nil {
			return err
		}
		out = &task
		return nil
	})
	return out, err
}

// The statements a claim runs, named for TestHotQueryPlans, which holds
// each to an index that keeps it flat however many tasks the database holds
// (migration 0011).
const (
	// nextQueuedSQL and nextQueuedOrder find the recipient's next queued
	// task (filters go between them) in tasks_queue's order. The recipient
	// is bound as +? so that the statement stays prepared (see limitSQL).
	nextQueuedSQL   = `SELECT ` + taskColumns + ` FROM tasks t WHERE t.recipient_slug = +? AND t.status = 'queued'`
	nextQueuedOrder = ` ORDER BY t.priority DESC, t.created_at ASC, t.rowid ASC LIMIT 1`
	// leaveLiveSQL leaves out the tasks aimed at one of the recipient's
	// live sessions seen since ? (ClaimInput.LeaveLiveSessions).
	leaveLiveSQL = ` AND NOT EXISTS (SELECT 1 FROM live_sessions ls WHERE ls.agent_slug = t.recipient_slug
		AND ls.session_id = t.target_session AND ls.last_seen >= ?)`
	// expiredLeasesSQL finds claimed tasks whose lease has run out;
	// expiredLeasesOfSQL narrows it to one recipient (tasks_leases).
	expiredLeasesSQL   = `SELECT id, sender_slug, recipient_slug, title FROM tasks WHERE status = 'claimed' AND lease_expires_at <= ?`
	expiredLeasesOfSQL = ` AND recipient_slug = ?`
)

// claim claims task (queued, with its timeline read) for c's recipient:
// the row, the change and the sender's task-claimed event.
func (t *tx) claim(c claimRequest, task relay.Task) (relay.Task, error) {
	lease := relay.FormatTime(t.now.Add(c.lease))
	if _, err := t.exec(`UPDATE tasks SET status = 'claimed', claimed_at = ?, claimed_via = ?, lease_expires_at = ?, updated_at = ?, claim_session = ?
		WHERE id = ?`, t.ts, c.via, lease, t.ts, nullString(c.session), task.ID); err != nil {
		return task, fmt.Errorf("claim task %s: %w", task.ID, err)
	}
	task.Status, task.ClaimedAt, task.ClaimedVia, task.LeaseExpiresAt, task.UpdatedAt = relay.StatusClaimed, t.ts, c.via, lease, t.ts
	t.taskKnown(task)
	summary := fmt.Sprintf("%s claimed “%s”.", c.recipient, task.Title)
	if c.via == relay.ViaWorker {
		summary = fmt.Sprintf("%s claimed “%s” (worker).", c.recipient, task.Title)
	}
	return task, t.event(task.SenderSlug, relay.EventTaskClaimed, task.ID, summary)
}

// requeueExpired returns claimed tasks whose lease has passed to their
// recipient's queue (only recipient's, unless it is ""), with a timeline
// entry and a task-requeued event for the sender, and wakes the recipients.
func requeueExpired(t *tx, recipient string) (int, error) {
	query := expiredLeasesSQL
	args := []any{t.ts}
	if recipient != "" {
		query += expiredLeasesOfSQL
		args = append(args, recipient)
	}
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	type expired struct{ id, sender, recipient, title string }
	var list []expired
	for rows.Next() {
		var e expired
		if err := rows.Scan(&e.id, &e.sender, &e.recipient, &e.title); err != nil {
			rows.Close()
			return 0, fmt.Errorf("find expired leases: %w", err)
		}
		list = append(list, e)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	for _, e := range list {
		if err := requeue(t, e.id); err != nil {
			return 0, err
		}
		if err := t.report(e.id, relay.ReportProgress, leaseExpiredReport, ""); err != nil {
			return 0, err
		}
		if err := t.event(e.sender, relay.EventTaskRequeued, e.id, fmt.Sprintf("Lease expired for “%s”; it was requeued.", e.title)); err != nil {
			return 0, err
		}
		if _, err := t.taskChanged(e.id); err != nil {
			return 0, err
		}
		t.wakeUp(e.recipient)
	}
	return len(list), nil
}
