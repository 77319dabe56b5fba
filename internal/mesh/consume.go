package mesh

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The consumer: NATS lets up to consumeWindow messages be out
// unacknowledged (the consumer's MaxAckPending); the relay takes what has
// arrived in batches of up to applyBatch messages, in the stream's order,
// applies their changes in store writes of about applyBatch changes (a
// message's all in one write, each change in its own savepoint), and
// acknowledges each message only after the commit that applied it. Order is kept per
// task by the messages' numbers (relay.MeshChange.Seq): a message that
// comes before an earlier one of its task (a redelivery after a crash, a
// failed publish sent again) waits, delivered again every gapDelay, and
// is applied anyway after gapDeliveries deliveries, when the earlier one
// is not coming. Those waiting take at most half the window, those of one
// relay an eighth (gap.go).

// consumeWindow, applyBatch and gapDeliveries are variables for tests.
var (
	consumeWindow = 256
	applyBatch    = 64
	// gapDeliveries is how many deliveries a message that came before an
	// earlier one of its task waits at most: longer than the consumer's
	// acknowledgement wait (ackWait, 30 s), after which any earlier message
	// delivered and not acknowledged comes again.
	gapDeliveries = uint64(45)
)

// gapDelay is how long a message that came before an earlier one of its
// task waits before it is delivered again.
const gapDelay = time.Second

// consumeLoop applies what other relays send this one until Close.
func (n *Node) consumeLoop() {
	msgs := make(chan jetstream.Msg, consumeWindow)
	// Short pulls with heartbeats: a pull lost with a NATS node (or a
	// consumer leader that moved) is noticed within seconds, not 30 s.
	cc, err := n.cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-n.ctx.Done():
		}
	}, jetstream.PullMaxMessages(consumeWindow), jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(2*time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if n.ctx.Err() == nil {
				n.log.Debug("mesh: consume", "err", err)
			}
		}))
	if err != nil {
		n.setErr("consume", err)
		return
	}
	defer func() {
		cc.Stop()
		<-cc.Closed()
	}()
	batch := make([]jetstream.Msg, 0, applyBatch)
	for {
		select {
		case <-n.ctx.Done():
			return
		case m := <-msgs:
			batch = append(batch[:0], m)
		}
	more:
		for len(batch) < applyBatch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break more
			}
		}
		n.handle(batch)
	}
}

// handle applies a batch of messages from the stream in their order, the
// changes of all of them in one store write, and then acknowledges each
// that is done with: nothing is acknowledged before the commit that
// applied it. A message comes again when any of its changes must (a store
// failure, an earlier message of its task missing); the changes it applied
// or refused are not judged again when it comes back for an earlier
// message (gapWait.done), and are recognised by their ids after a store
// failure or a restart.
func (n *Node) handle(msgs []jetstream.Msg) {
	outs := make([]outcome, len(msgs))
	var (
		ins []relay.RemoteApply
		at  []int // the message each of ins came in
	)
	n.freshDirectory(msgs)
	gaps, from := n.gaps.batch(), make([]string, len(msgs))
	n.applyMu.Lock()
	for i, m := range msgs {
		o, got := n.judge(m.Data(), false, false)
		outs[i] = o
		if o == apply {
			outs[i] = ack // unless a change says otherwise (below)
			from[i] = got[0].FromRelay
			force := gaps.force(m, from[i])
			done := n.gaps.doneOf(m)
			for k := range got {
				if done[got[k].MsgID] {
					continue // settled when the message came before
				}
				got[k].Force = force
				ins, at = append(ins, got[k]), append(at, i)
			}
		}
	}
	each, done := make([][]outcome, len(msgs)), make([][]string, len(msgs))
	start := 0
	for _, end := range writeEnds(at, applyBatch) {
		res, err := n.opts.Store.ApplyRemoteBatch(n.ctx, ins[start:end])
		for k := start; k < end; k++ {
			o := retry // nothing of the write was committed
			if err == nil {
				o = n.settleApply(ins[k], res[k-start])
			}
			each[at[k]] = append(each[at[k]], o)
			if o == ack {
				done[at[k]] = append(done[at[k]], ins[k].MsgID)
			}
		}
		if err != nil {
			n.setErr("apply", err)
		}
		start = end
	}
	for i, os := range each {
		if os != nil {
			outs[i] = worst(os)
		}
	}
	n.applyMu.Unlock()
	n.gaps.settle(msgs, outs, from, done)
	for i, m := range msgs {
		var err error
		switch outs[i] {
		case ack:
			// Lost, the message comes again after the acknowledgement
			// wait and is recognised by its id.
			err = m.Ack()
		case retry:
			err = m.NakWithDelay(time.Second) // redelivered after AckWait even if the nak is lost
		case later:
			err = m.NakWithDelay(heldFullDelay)
		case early:
			err = m.NakWithDelay(gapDelay)
		}
		if err != nil && n.ctx.Err() == nil {
			n.setErr("ack", err)
		}
	}
}

// writeEnds splits changes into store writes of size changes, or more to
// keep a message's changes in one write (at is the message each change
// came in, in order): the end of each write. A batch of lists (up to
// maxBatch changes each) so makes no write that holds the store longer
// than a list's.
func writeEnds(at []int, size int) []int {
	var ends []int
	for start := 0; start < len(at); {
		end := start + 1
		for end < len(at) && (end-start < size || at[end] == at[end-1]) {
			end++
		}
		ends = append(ends, end)
		start = end
	}
	return ends
}
