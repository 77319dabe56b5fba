package mesh

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// gapWaits are the messages waiting in the consumer's window for an
// earlier message of their task (a gap in its numbers), by their place in
// the stream. They take at most half the window (gapRoom): one that would
// wait past that is applied at once, as it would be after gapDeliveries,
// so gaps, made on purpose by a trusted relay or by bad luck, never stop
// what other relays send. Applied early, a message loses nothing: the
// earlier one, when it comes, adds its update without taking the task's
// state back.
type gapWaits struct {
	mu sync.Mutex
	at map[uint64]time.Time // stream sequence → when it first waited
}

// gapRoom is how many messages may wait for an earlier one at once.
func gapRoom() int { return max(1, consumeWindow/2) }

// gapForget is how long a message is remembered as waiting: past it, a
// message that never came again (gone from the stream) frees its place.
func gapForget() time.Duration {
	return 2 * (time.Duration(gapDeliveries)*gapDelay + ackWait)
}

// plan says, for each message of a batch, whether it must be applied even
// if an earlier message of its task is missing: it was delivered
// gapDeliveries times, or it does not wait already and the room for
// waiting messages is taken (counting those of the batch before it that
// may wait).
func (g *gapWaits) plan(msgs []jetstream.Msg) []bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for k, at := range g.at {
		if now.Sub(at) > gapForget() {
			delete(g.at, k)
		}
	}
	force := make([]bool, len(msgs))
	taken := len(g.at)
	for i, m := range msgs {
		seq, n := placeOf(m)
		if _, waits := g.at[seq]; waits && seq != 0 {
			force[i] = n >= gapDeliveries
			continue
		}
		if seq == 0 || taken >= gapRoom() || n >= gapDeliveries {
			force[i] = true
			continue
		}
		taken++ // it may wait: its place is kept
	}
	return force
}

// settle records which messages of a batch wait (early) and forgets the
// others.
func (g *gapWaits) settle(msgs []jetstream.Msg, outs []outcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at == nil {
		g.at = map[uint64]time.Time{}
	}
	now := time.Now()
	for i, m := range msgs {
		seq, _ := placeOf(m)
		if seq == 0 {
			continue
		}
		if outs[i] != early {
			delete(g.at, seq)
		} else if _, ok := g.at[seq]; !ok {
			g.at[seq] = now
		}
	}
}

// waiting counts the messages waiting for an earlier one.
func (g *gapWaits) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.at)
}

// placeOf is m's place in the stream (0 when unknown) and how many times
// it was delivered, this time included.
func placeOf(m jetstream.Msg) (uint64, uint64) {
	md, err := m.Metadata()
	if err != nil {
		return 0, 1
	}
	return md.Sequence.Stream, md.NumDelivered
}
