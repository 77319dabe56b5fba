package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ClaimNext claims the recipient's most urgent, oldest queued task (from
// in.FromSenders only, when set), waiting up to in.Wait for one. Waiting is
// in-process: post, release, requeue, request changes, an invite's first
// task and lease-expiry requeues wake it; nothing polls the database. It
// returns nil when no task came in time, when ctx ends or when the store
// closes.
//
// A claim that waits does so on its caller's goroutine, in one select over
// the hand-off (a post claims its task for the claim in the post's own
// commit, below), its recipient's wake-up, its timer and ctx.
func (db *DB) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	c, err := newClaimRequest(in)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(max(in.Wait, 0))
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if db.closed.Load() || ctx.Err() != nil {
			return nil, nil
		}
		remaining := time.Until(deadline)
		if remaining <= 0 { // one attempt, nothing to wait for
			task, err := db.tryClaim(ctx, c, nil)
			return db.attemptAnswer(ctx, task, err)
		}
		// Watched before the attempt, so that a task queued after it wakes
		// the claim.
		woken := db.waiters.Watch(c.recipient)
		p := newParked(ctx, c) // the claim a post may hand its task to while it waits
		task, err := db.tryClaim(ctx, c, p)
		if err != nil || task != nil {
			return db.attemptAnswer(ctx, task, err)
		}
		// The timer counts from after the attempt, up to the deadline.
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		} else {
			timer.Reset(time.Until(deadline))
		}
		again := false
		select {
		case t := <-p.result:
			return t, nil
		case <-woken:
			again = true
		case <-timer.C:
		case <-ctx.Done():
		}
		if testHookClaimLeaving != nil {
			testHookClaimLeaving()
		}
		// A post may have taken the claim meanwhile: its task is ours.
		if t := db.parking.leave(p); t != nil {
			return t, nil
		}
		if !again {
			return nil, nil
		}
	}
}

// attemptAnswer is an attempt's answer: an error while the store closes or
// the caller goes is no error, only no task.
func (db *DB) attemptAnswer(ctx context.Context, task *relay.Task, err error) (*relay.Task, error) {
	if err != nil && (db.closed.Load() || ctx.Err() != nil) {
		return nil, nil
	}
	return task, err
}

// newClaimRequest is the claim of in, checked (relay.ClaimInput.Validate).
func newClaimRequest(in relay.ClaimInput) (claimRequest, error) {
	in, err := in.Validate()
	if err != nil {
		return claimRequest{}, err
	}
	claim := claimRequest{recipient: in.RecipientSlug, lease: time.Duration(in.LeaseSeconds) * time.Second, via: in.Via,
		senders: in.FromSenders, filter: in.FromSenders != nil, session: in.Session, leaveLive: in.LeaveLiveSessions}
	if in.ForSessions != nil {
		claim.sessions = append([]string{""}, in.ForSessions...)
	}
	return claim, nil
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
	// leaveLive skips tasks aimed at a live session of the recipient,
	// except, for a live session's claim, those aimed at itself.
	leaveLive bool
}

// tryClaim is one claim attempt in one transaction: requeue the recipient's
// expired leases, refresh its presence, claim the next task. When there is
// none and p is set, p is parked after the commit, so that a later post can
// hand it its task (below).
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
		switch {
		case c.leaveLive && c.session != "":
			query += leaveOtherLiveSQL
			args = append(args, c.session, liveStreamCutoff(t))
		case c.leaveLive:
			query += leaveLiveSQL
			args = append(args, liveStreamCutoff(t))
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
	// liveTargetSQL holds for a task t aimed at one of its recipient's
	// sessions live for delivery: its push stream seen since ?
	// (liveStreamCutoff). Claims and hand-offs (handOff) use it alike.
	liveTargetSQL = `EXISTS (SELECT 1 FROM live_sessions ls WHERE ls.agent_slug = t.recipient_slug
		AND ls.session_id = t.target_session AND ls.stream_seen >= ?)`
	// leaveLiveSQL leaves out the tasks aimed at a live session
	// (ClaimInput.LeaveLiveSessions).
	leaveLiveSQL = ` AND NOT ` + liveTargetSQL
	// leaveOtherLiveSQL is leaveLiveSQL for a live session's claim: the
	// tasks aimed at the session itself (its id, ?) are its own. (A live
	// target is matched by id, what a post records once resolved.)
	leaveOtherLiveSQL = ` AND (t.target_session = ? OR NOT ` + liveTargetSQL + `)`
)

// liveStreamCutoff is the oldest stream record of a session live for
// delivery now (relay.LiveStreamWindow).
func liveStreamCutoff(t *tx) string {
	return relay.FormatTime(t.now.Add(-relay.LiveStreamWindow))
}

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

// Hand-off: a claim that found nothing and waits is parked here; a
// post_task for its recipient that it would take claims the task for it in
// the post's own transaction, so a wake-up costs one commit instead of two
// (the post's, then the woken claim's). The claim is answered only after
// that commit, like any write.
//
// A parked claim is in one of three states. A write takes it (waiting →
// taken) and, once its transaction has committed, hands it the task; if the
// transaction is rolled back instead, the claim goes back to waiting. The
// claimer leaving (time up, caller gone, woken for another reason) moves it
// from waiting to gone; when it finds it taken, it waits for the write's
// outcome, which comes within that write's batch.
const (
	parkWaiting int32 = iota
	parkTaken
	parkGone
)

// testHookClaimLeaving, nil outside tests, runs when a waiting claim's
// wait ends (a task, a wake-up, its time or its caller gone), before it
// leaves the registry.
var testHookClaimLeaving func()

// parked is one waiting claim that a post may hand its task to.
type parked struct {
	c     claimRequest
	state atomic.Int32
	// result gets the task once, after the commit of the write that took
	// the claim. Buffered: the writer never blocks on it.
	result chan *relay.Task
	// released nudges a claimer that is leaving: the write that took the
	// claim was rolled back, so it is waiting again. Buffered, never
	// blocks.
	released chan struct{}
	// ctx is the claimer's: once it is done, the claimer is leaving and
	// no write takes the claim (take).
	ctx context.Context
}

// newParked is a claim about to wait for c, as long as ctx lasts.
func newParked(ctx context.Context, c claimRequest) *parked {
	return &parked{c: c, result: make(chan *relay.Task, 1), released: make(chan struct{}, 1), ctx: ctx}
}

// gone reports whether p's claimer has left (its context is done).
func (p *parked) gone() bool { return p.ctx.Err() != nil }

// parking is the registry of parked claims by recipient, oldest first.
type parking struct {
	mu     sync.Mutex
	claims map[string][]*parked
}

// park registers a claim that found nothing (from the writer, after the
// commit of the claim attempt, so every later write sees it).
func (pk *parking) park(p *parked) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.claims == nil {
		pk.claims = make(map[string][]*parked)
	}
	pk.claims[p.c.recipient] = append(pk.claims[p.c.recipient], p)
}

// remove drops p from the registry.
func (pk *parking) remove(p *parked) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.removeLocked(p)
}

// removeLocked drops p from the registry; the caller holds pk.mu.
func (pk *parking) removeLocked(p *parked) {
	list := slices.DeleteFunc(pk.claims[p.c.recipient], func(q *parked) bool { return q == p })
	if len(list) == 0 {
		delete(pk.claims, p.c.recipient)
	} else {
		pk.claims[p.c.recipient] = list
	}
}

// take reserves the oldest claim parked for recipient that would claim a
// task from sender aimed at session (live: one of the recipient's live
// sessions), and drops it from the registry. A claim whose caller has
// gone (its context done) is passed over: it is leaving.
func (pk *parking) take(recipient, sender, session string, live bool) *parked {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	for _, p := range pk.claims[recipient] {
		if p.gone() {
			continue
		}
		if p.c.wants(sender, session, live) && p.state.CompareAndSwap(parkWaiting, parkTaken) {
			pk.removeLocked(p)
			return p
		}
	}
	return nil
}

// release puts a claim that a rolled-back write had taken back to waiting.
func (pk *parking) release(p *parked) {
	pk.park(p)
	p.state.Store(parkWaiting)
	select {
	case p.released <- struct{}{}:
	default:
	}
}

// handed gives a taken claim its task, after the commit.
func handed(h handoff) {
	h.p.result <- &h.task
}

// leave ends p's wait: it returns the task a write handed it, or nil when
// none did (p is then out of the registry for good).
func (pk *parking) leave(p *parked) *relay.Task {
	for {
		if p.state.CompareAndSwap(parkWaiting, parkGone) {
			pk.remove(p)
			return nil
		}
		// Taken: the write that took it answers within its batch.
		select {
		case t := <-p.result:
			return t
		case <-p.released:
		}
	}
}

// wants reports whether the claim would take a task from sender aimed at
// session ("" for none), live when that is one of the recipient's live
// sessions: the rule of the claim's query (tryClaim).
func (c claimRequest) wants(sender, session string, live bool) bool {
	if c.filter && !slices.Contains(c.senders, sender) {
		return false
	}
	if c.sessions != nil && !slices.Contains(c.sessions, session) {
		return false
	}
	if live && c.leaveLive {
		// Left to that session, unless this is its own claim.
		return c.session != "" && session == c.session
	}
	return true
}

// handoff is a task a write claimed for a parked claim.
type handoff struct {
	p    *parked
	task relay.Task
}

// wakeUp queues a wake-up of slug's waiting claims for after commit.
func (t *tx) wakeUp(slug string) { t.wake = append(t.wake, slug) }

// handOff gives a task just posted to the oldest claim waiting for it
// (below): claimed in this transaction for that claim, whose agent
// is present now, and handed to it after the commit. A task aimed at a
// live session (liveTargetSQL) goes only to a claim that does not leave it
// (ClaimInput.LeaveLiveSessions): that session's own, or a worker bound to
// it. With no such claim, the recipient's waiting claims are woken to look
// for it.
func (t *tx) handOff(task relay.Task) error {
	live := false
	if task.TargetSession != "" {
		var one int
		err := t.tx.QueryRowContext(t.ctx, `SELECT 1 FROM (SELECT ? AS recipient_slug, ? AS target_session) t WHERE `+liveTargetSQL,
			task.RecipientSlug, task.TargetSession, liveStreamCutoff(t)).Scan(&one)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read live session: %w", err)
		}
		live = err == nil
	}
	p := t.db.parking.take(task.RecipientSlug, task.SenderSlug, task.TargetSession, live)
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
