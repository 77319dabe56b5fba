package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

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
// (handoff.go): claimed in this transaction for that claim, whose agent
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
