package mesh

import (
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// rescanEvery is how often the publisher reads the whole outbox again with
// nothing announced (rows that failed to go, tasks whose retry is due).
var rescanEvery = 5 * time.Second

// publishLoop sends the outbox whenever the store commits a change or NATS
// answers a publish, and retries what failed after pubRetry.
func (n *Node) publishLoop() {
	defer n.wg.Done()
	changes, stop := n.subscribe()
	defer func() { stop() }()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		look := true // read the outbox, unless only NATS answered
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
				n.nudge()
			case relay.ChangeAgent:
				if c.Agent != nil && n.isLocal(c.Agent.Slug) {
					n.advertiseAgent(*c.Agent)
				}
			}
			continue
		case <-n.kick:
		case <-n.pub.ready:
			look = false
		case <-retry.C:
			n.rescan.Store(true) // tasks whose retry is due, rows that failed to go
		}
		wait := rescanEvery
		if err := n.step(look); err != nil {
			n.setErr("publish", err)
			wait = pubRetry
		}
		if at := n.pub.nextRetry(); !at.IsZero() {
			wait = min(wait, max(time.Until(at), time.Millisecond))
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
