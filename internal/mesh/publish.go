package mesh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The publisher sends the outbox with up to pubWindow messages in flight,
// acknowledged asynchronously, and deletes a row only once NATS has stored
// it. Order is kept per task, not across tasks: a task's rows are
// published in their order on one connection, so the stream stores them in
// that order; when one fails, the task waits (pubRetry) and starts again
// from that row, its later rows held back. A later row of the task already
// in flight may still be stored first; the receiving relay applies a
// task's messages by their number (relay.MeshChange.Seq), so it waits for
// the earlier one.

// pubWindow bounds the messages in flight; a variable for tests.
var pubWindow = 256

// pubRetry is how long a task whose publish failed waits before it is
// published again.
const pubRetry = time.Second

// publisher is the publisher's state. flush runs under mu, from the
// publish loop (and from tests); the NATS client's acknowledgement handler
// only appends to results under resMu and pokes ready.
type publisher struct {
	mu sync.Mutex
	// inflight are the rows of each message NATS has not answered, by the
	// message's id: one row, or the list one envelope carries.
	inflight map[string][]relay.OutboxItem
	waiting  map[string]time.Time // task id → when it may go again
	// stored are rows NATS stored, waiting to be deleted; deleting those
	// being deleted now (deleteLoop: off the publish path, so publishing
	// never waits for a commit). Both count as in flight. toDelete pokes
	// deleteLoop.
	stored   []relay.OutboxItem
	deleting []relay.OutboxItem
	delErr   error // the last deletion's failure, reported by the next flush
	toDelete chan struct{}
	// more says the outbox may hold rows to publish that no change has
	// announced and that the head would not show: the window was full.
	// recheck says the head must be looked at although no change was
	// announced: a deletion may have written a state row again
	// (AckOutbox). seen is the outbox's head (OutboxHead) when it was last
	// read, or the newest row that read returned if it came later.
	more, recheck bool
	seen          int64

	resMu   sync.Mutex
	results []pubResult
	ready   chan struct{} // poked when results has something
}

// pubResult is NATS's answer to one publish.
type pubResult struct {
	msgID string
	err   error
}

func newPublisher() publisher {
	return publisher{inflight: map[string][]relay.OutboxItem{}, waiting: map[string]time.Time{}, ready: make(chan struct{}, 1),
		toDelete: make(chan struct{}, 1)}
}

// publishOptions are the JetStream options of the asynchronous publishes:
// answers go to the publisher, every publish is answered within opTimeout.
func (n *Node) publishOptions() []jetstream.JetStreamOpt {
	return []jetstream.JetStreamOpt{
		jetstream.WithPublishAsyncMaxPending(pubWindow),
		jetstream.WithPublishAsyncTimeout(opTimeout),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			n.messages.Add(1)
			n.pub.answer(m, nil)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			n.pub.answer(m, err)
		}),
	}
}

// answer records NATS's answer to the publish of m; it never blocks.
func (p *publisher) answer(m *nats.Msg, err error) {
	r := pubResult{err: err}
	if m != nil && m.Header != nil {
		r.msgID = m.Header.Get(jetstream.MsgIDHeader)
	}
	p.resMu.Lock()
	p.results = append(p.results, r)
	p.resMu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// takeResults returns the answers so far and clears them.
func (p *publisher) takeResults() []pubResult {
	p.resMu.Lock()
	defer p.resMu.Unlock()
	r := p.results
	p.results = nil
	return r
}

// flush settles what NATS answered (deleting what it stored, and holding
// back for pubRetry the tasks whose publish failed) and publishes what may
// go now, up to pubWindow in flight. Rows for a relay this one does not
// trust (pending after a key change, or blocked) wait in the outbox until
// it is trusted. It returns the first failure, if any.
func (n *Node) flush() error {
	n.rescan.Store(true)
	return n.step(true)
}

// step is flush as the publish loop runs it. look says a change was
// committed: the outbox is read if a row was added since it was last read
// (OutboxHead, a cheap look), or whatever the head when a rescan was asked
// for (poke: a relay trusted, NATS back, a retry due) or the window was
// full; without look (NATS answered) only in those cases, and for a look
// at the head after a deletion that may have written a row again.
func (n *Node) step(look bool) error {
	p := &n.pub
	p.mu.Lock()
	defer p.mu.Unlock()
	err := n.settle()
	full := n.rescan.Swap(false) || p.more
	look = look || p.recheck
	p.recheck = false
	if !look && !full {
		return err
	}
	if !n.nc.IsConnected() {
		// Rows wait in the outbox; say so only when some do.
		items, qerr := n.opts.Store.PendingOutbox(n.ctx, relay.OutboxQuery{Limit: 1, Skip: n.untrusted(), Busy: p.busy()})
		if qerr != nil || len(items) > 0 {
			err = errors.Join(err, qerr, errors.New("not connected to NATS"))
		}
		return err
	}
	if p.out() >= pubWindow {
		// Nothing can go now, and taking the head as seen would pass over
		// rows not read: read once the window has room (a deletion frees
		// it and wakes the loop).
		p.more = true
		return err
	}
	head, herr := n.opts.Store.OutboxHead(context.WithoutCancel(n.ctx))
	if herr != nil {
		return errors.Join(err, herr)
	}
	if !full && head <= p.seen {
		return err // no row added since the outbox was read
	}
	p.more, p.seen = false, head
	for n.ctx.Err() == nil && p.out() < pubWindow {
		room := pubWindow - p.out()
		// Not cancelled with the node (a short read): no goroutine watches it.
		n.reads.Add(1)
		items, qerr := n.opts.Store.PendingOutbox(context.WithoutCancel(n.ctx), relay.OutboxQuery{Limit: room, Skip: n.untrusted(), Busy: p.busy(), Waiting: p.held()})
		if qerr != nil {
			return errors.Join(err, qerr)
		}
		for _, it := range items {
			// A row committed after the head was read is read all the
			// same: the next look at the head need not read again for
			// it. (The rows an item carries come before its own.)
			p.seen = max(p.seen, it.Seq)
		}
		for _, g := range n.envelopes(items) {
			// A task whose earlier row just failed sends none of its later ones.
			g.items = slices.DeleteFunc(g.items, func(it outItem) bool { _, wait := p.waiting[it.TaskID]; return wait })
			if len(g.items) == 0 {
				continue
			}
			id, data, serr := g.seal(n.id)
			if serr == nil {
				_, serr = n.js.PublishAsync(subject(g.to), data, jetstream.WithMsgID(id))
			}
			rows := g.rows()
			if serr != nil {
				for _, it := range rows {
					p.waiting[it.TaskID] = time.Now().Add(pubRetry)
				}
				err = errors.Join(err, fmt.Errorf("publish to %s: %w", g.to, serr))
				continue
			}
			p.inflight[id] = rows
		}
		rows := 0
		for _, it := range items {
			rows += 1 + len(it.Merged)
		}
		if rows < room {
			break
		}
		p.more = p.out() >= pubWindow // the window is full: more may wait
	}
	return err
}

// settle takes NATS's answers: the rows it stored are deleted (in the
// background, one write at a time), and a task whose publish failed waits
// pubRetry before it goes again from that row. Called with p.mu held.
func (n *Node) settle() error {
	p := &n.pub
	err := p.delErr
	p.delErr = nil
	for _, r := range p.takeResults() {
		rows, ok := p.inflight[r.msgID]
		if !ok {
			continue
		}
		delete(p.inflight, r.msgID)
		if r.err != nil {
			for _, it := range rows {
				p.waiting[it.TaskID] = time.Now().Add(pubRetry)
			}
			if err == nil {
				err = fmt.Errorf("publish to %s: %w", rows[0].ToRelay, r.err)
			}
			continue
		}
		p.stored = append(p.stored, rows...)
		n.published.Add(int64(len(rows)))
	}
	now := time.Now()
	for id, at := range p.waiting {
		if !now.Before(at) {
			delete(p.waiting, id)
		}
	}
	if len(p.stored) > 0 {
		select {
		case p.toDelete <- struct{}{}:
		default:
		}
	}
	return err
}

// delDelay is how long the rows NATS stored are gathered before they are
// deleted in one write: under load, one commit deletes many.
var delDelay = 10 * time.Millisecond

// deleteLoop deletes the rows NATS stored, gathered into one write at most
// every delDelay, until Close (when it deletes what is left). A row whose
// deletion fails stays in the outbox and is published again: NATS (or the
// receiving relay) recognises it by its id.
func (n *Node) deleteLoop() {
	defer n.wg.Done()
	p := &n.pub
	for {
		select {
		case <-n.ctx.Done():
			n.deleteStored()
			return
		case <-p.toDelete:
		}
		select {
		case <-n.ctx.Done():
		case <-time.After(delDelay):
		}
		n.deleteStored()
	}
}

// deleteStored deletes the rows NATS stored so far (one write) and lets the
// publisher go on.
func (n *Node) deleteStored() {
	p := &n.pub
	p.mu.Lock()
	rows := p.stored
	p.stored, p.deleting = nil, rows
	busy := make([]relay.OutboxItem, 0, len(p.inflight))
	for _, rows := range p.inflight {
		busy = append(busy, rows...)
	}
	p.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	err := n.opts.Store.AckOutbox(context.WithoutCancel(n.ctx), rows, busy)
	p.mu.Lock()
	p.deleting = nil
	if err != nil {
		p.delErr = err
	}
	for _, it := range rows {
		if it.Change.Event == nil || len(it.Merged) > 0 {
			// A state row may have been written again: it would show in
			// the head, which no change announces.
			p.recheck = true
			break
		}
	}
	p.mu.Unlock()
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

// busy lists the rows read and not yet deleted: in flight, stored or being
// deleted. Called with p.mu held.
func (p *publisher) busy() []int64 {
	out := make([]int64, 0, len(p.inflight)+len(p.stored)+len(p.deleting))
	for _, rows := range [][]relay.OutboxItem{p.stored, p.deleting} {
		for _, it := range rows {
			out = append(append(out, it.Seq), it.Merged...)
		}
	}
	for _, rows := range p.inflight {
		for _, it := range rows {
			out = append(append(out, it.Seq), it.Merged...)
		}
	}
	return out
}

// out counts the rows read and not yet deleted. Called with p.mu held.
func (p *publisher) out() int {
	n := len(p.stored) + len(p.deleting)
	for _, rows := range p.inflight {
		n += len(rows)
	}
	return n
}

// held lists the tasks waiting to be published again. Called with p.mu held.
func (p *publisher) held() []string {
	out := make([]string, 0, len(p.waiting))
	for id := range p.waiting {
		out = append(out, id)
	}
	return out
}

// nextRetry is when the earliest waiting task may go again (zero: none).
func (p *publisher) nextRetry() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first time.Time
	for _, at := range p.waiting {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}
