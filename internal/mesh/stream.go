package mesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// publishLoop sends the outbox whenever the store commits a change, and
// retries every second while NATS does not acknowledge.
func (n *Node) publishLoop() {
	defer n.wg.Done()
	changes, stop := n.subscribe()
	defer func() { stop() }()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case c, ok := <-changes:
			if !ok { // fell behind: subscribe again and look at the outbox
				changes, stop = n.subscribe()
				n.poke()
				continue
			}
			switch c.Type {
			case relay.ChangeTask, relay.ChangeJournal:
				n.poke()
			case relay.ChangeAgent:
				if c.Agent != nil && n.isLocal(c.Agent.Slug) {
					n.advertiseAgent(*c.Agent)
				}
			}
			continue
		case <-n.kick:
		case <-retry.C:
		}
		wait := 5 * time.Second
		if err := n.flush(); err != nil {
			n.setErr("publish", err)
			wait = time.Second
		}
		retry.Reset(wait)
	}
}

func (n *Node) subscribe() (<-chan relay.Change, func()) {
	if n.opts.Changes == nil {
		return nil, func() {}
	}
	return n.opts.Changes(1024)
}

// flush publishes the outbox in order, one acknowledged message at a time,
// and deletes what NATS stored. It stops at the first failure, so nothing
// later overtakes a message that did not go out. Rows for a relay this one
// does not trust (pending after a key change, or blocked) wait in the
// outbox until it is trusted.
func (n *Node) flush() error {
	for n.ctx.Err() == nil {
		items, err := n.opts.Store.PendingOutbox(n.ctx, outboxBatch, n.untrusted()...)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			return nil
		}
		var done []int64
		var pubErr error
		for _, it := range items {
			data, err := seal(n.id, it.MsgID, it.ToRelay, it.Change)
			if err != nil {
				pubErr = err
				break
			}
			ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
			_, err = n.js.Publish(ctx, subject(it.ToRelay), data, jetstream.WithMsgID(it.MsgID))
			cancel()
			if err != nil {
				pubErr = fmt.Errorf("publish to %s: %w", it.ToRelay, err)
				break
			}
			n.published.Add(1)
			done = append(done, it.Seq)
		}
		if err := n.opts.Store.DeleteOutbox(context.WithoutCancel(n.ctx), done...); err != nil {
			return errors.Join(pubErr, err)
		}
		if pubErr != nil {
			return pubErr
		}
	}
	return nil
}

// consumeLoop applies what other relays send this one until Close.
func (n *Node) consumeLoop() {
	// Short pulls with heartbeats: a pull lost with a NATS node (or a
	// consumer leader that moved) is noticed within seconds, not 30 s.
	cc, err := n.cons.Consume(n.handle, jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(2*time.Second), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if n.ctx.Err() == nil {
			n.log.Debug("mesh: consume", "err", err)
		}
	}))
	if err != nil {
		n.setErr("consume", err)
		return
	}
	<-n.ctx.Done()
	cc.Stop()
	<-cc.Closed()
}
