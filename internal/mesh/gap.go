package mesh

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// gapWaits are the messages waiting in the consumer's window for an
// earlier message of their task (a gap in its numbers), by their place in
// the stream. They take at most half the window (gapRoom), and the
// messages of one relay at most an eighth (gapShare): one that would wait
// past that is applied at once, as it would be after gapDeliveries, so
// gaps, made on purpose by a trusted relay or by bad luck, never stop what
// other relays send, nor take the places other relays' gaps wait in.
// Applied early, a message loses nothing: the earlier one, when it comes,
// adds its update without taking the task's state back.
type gapWaits struct {
	mu sync.Mutex
	at map[uint64]gapWait // stream sequence → its wait
}

// gapWait is one message waiting for an earlier one: from which relay,
// since when.
type gapWait struct {
	relay string
	since time.Time
	// done are the message's changes (ids) applied or refused when it
	// came before: each is judged once, not again when the message comes
	// back for another of its changes.
	done map[string]bool
}

// gapRoom is how many messages may wait for an earlier one at once, and
// gapShare how many of one relay.
func gapRoom() int  { return max(1, consumeWindow/2) }
func gapShare() int { return max(1, consumeWindow/8) }

// gapForget is how long a message is remembered as waiting: past it, a
// message that never came again (gone from the stream) frees its place.
func gapForget() time.Duration {
	return 2 * (time.Duration(gapDeliveries)*gapDelay + ackWait)
}

// gapBatch is one batch's view of the waits: the places its messages
// before the one judged may take.
type gapBatch struct {
	g     *gapWaits
	taken map[string]int // relay → places taken in the batch
	all   int
}

// batch starts a batch, forgetting the messages that waited too long ago.
func (g *gapWaits) batch() *gapBatch {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	for k, w := range g.at {
		if now.Sub(w.since) > gapForget() {
			delete(g.at, k)
		}
	}
	return &gapBatch{g: g, taken: map[string]int{}}
}

// force says whether message m of relay from must be applied even if an
// earlier message of its task is missing: it was delivered gapDeliveries
// times, or it does not wait already and the room for waiting messages,
// or its relay's share of it, is taken (counting those of the batch before
// it that may wait).
func (b *gapBatch) force(m jetstream.Msg, from string) bool {
	seq, n := placeOf(m)
	if n >= gapDeliveries || seq == 0 {
		return true
	}
	b.g.mu.Lock()
	defer b.g.mu.Unlock()
	if _, waits := b.g.at[seq]; waits {
		return false
	}
	mine := b.taken[from]
	for _, w := range b.g.at {
		if w.relay == from {
			mine++
		}
	}
	if len(b.g.at)+b.all >= gapRoom() || mine >= gapShare() {
		return true
	}
	b.taken[from]++
	b.all++ // it may wait: its place is kept
	return false
}

// doneOf returns the changes of message m settled when it came before
// (nil: none).
func (g *gapWaits) doneOf(m jetstream.Msg) map[string]bool {
	seq, _ := placeOf(m)
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.at[seq].done
}

// settle records which messages of a batch wait (early), with the changes
// of each settled now (done), and forgets the others.
func (g *gapWaits) settle(msgs []jetstream.Msg, outs []outcome, from []string, done [][]string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.at == nil {
		g.at = map[uint64]gapWait{}
	}
	now := time.Now()
	for i, m := range msgs {
		seq, _ := placeOf(m)
		if seq == 0 {
			continue
		}
		if outs[i] != early {
			delete(g.at, seq)
			continue
		}
		w, ok := g.at[seq]
		if !ok {
			w = gapWait{relay: from[i], since: now}
		}
		for _, id := range done[i] {
			if w.done == nil {
				w.done = map[string]bool{}
			}
			w.done[id] = true
		}
		g.at[seq] = w
	}
}

// waiting counts the messages waiting for an earlier one, of relay from
// ("": of every relay).
func (g *gapWaits) waiting(from string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, w := range g.at {
		if from == "" || w.relay == from {
			n++
		}
	}
	return n
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
