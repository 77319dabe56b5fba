package mesh

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// countingStore is a relay's real store that counts the store writes
// applying envelopes (held ones released, and the consumer's batches).
type countingStore struct {
	relay.MeshStore
	applies atomic.Int64
}

func (s *countingStore) ApplyRemoteBatch(ctx context.Context, ins []relay.RemoteApply) ([]relay.ApplyResult, error) {
	s.applies.Add(1)
	return s.MeshStore.ApplyRemoteBatch(ctx, ins)
}

// Ensure releasing what a relay sent while not trusted takes a number of
// store writes in proportion to the envelopes, whatever order they were
// held in: a task's messages held last first are applied in their order
// in one more pass, not one pass per message (with n of them, n²/2
// writes while the consumer waits).
func TestReleaseHeldInReverseOrderIsLinear(t *testing.T) {
	a, b, counted := countedPair(t)
	ctx := t.Context()
	const n = 60
	task := queuedTask("alice", "bob", "Held backwards")
	now := time.Now()
	for seq := int64(n); seq >= 1; seq-- {
		id := fmt.Sprintf("back-%d", seq)
		data, err := sealAt(a.node.id, id, b.node.id.ID, relay.MeshChange{Task: task, Seq: seq}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: id, FromRelay: a.node.id.ID, Reason: HeldKeyChange, TaskID: task.ID, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	releasedInOrder(t, a, b, counted, task.ID, n)
}

// Ensure releasing held lists whose changes of one task are spread across
// them last first takes store writes in proportion to the lists: the
// waiting changes of all of them are tried in their task's order, not
// list by list (a review's case: n²/2 writes when lists were sorted by
// their first change).
func TestReleaseHeldListsIsLinear(t *testing.T) {
	a, b, counted := countedPair(t)
	ctx := t.Context()
	const n = 60
	chained := queuedTask("alice", "bob", "Chained")
	now := time.Now()
	for k := 1; k <= n; k++ {
		fresh := queuedTask("alice", "bob", fmt.Sprintf("Fresh %d", k))
		seq := int64(n - k + 1)
		items := rawItems(t, relay.MeshChange{Task: fresh, Seq: 1}, relay.MeshChange{Task: chained, Seq: seq})
		items[0].ID, items[1].ID = fmt.Sprintf("fresh-%d", k), fmt.Sprintf("chain-%d", seq)
		data, id, err := sealBatchAt(a.node.id, b.node.id.ID, items, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: id, FromRelay: a.node.id.ID, Reason: HeldKeyChange, TaskID: fresh.ID, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	releasedInOrder(t, a, b, counted, chained.ID, n)
}

// countedPair starts relays A and B, trusting each other with alice and
// bob, B's store counting its writes applying envelopes.
func countedPair(t *testing.T) (a, b *testRelay, counted *countingStore) {
	t.Helper()
	a = startRelay(t, "relay-a", "")
	b = startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) {
		counted = &countingStore{MeshStore: o.Store}
		o.Store = counted
	}, a.node.InviteURL())
	aliceMeetsBob(t, a, b)
	return a, b, counted
}

// releasedInOrder releases what B holds of A and checks that task's n
// messages were all applied in order, nothing is left held, and it took
// n to 3n store writes (n envelopes judged and applied once each, then the
// waiting changes in their order).
func releasedInOrder(t *testing.T, a, b *testRelay, counted *countingStore, task string, n int64) {
	t.Helper()
	ctx := t.Context()
	before := counted.applies.Load()
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err != nil {
		t.Fatal(err)
	}
	writes := counted.applies.Load() - before
	var last int64
	if err := rawDB(t, b).QueryRow(`SELECT in_seq FROM mesh_task_peers WHERE remote_id = ?`, task).Scan(&last); err != nil || last != n {
		t.Fatalf("the task's last message applied = %d, %v; want %d (all in order)", last, err, n)
	}
	if writes < n || writes > 3*n {
		t.Fatalf("releasing %d held envelopes took %d writes; want %d to %d", n, writes, n, 3*n)
	}
	if held, err := b.db.Mesh().HeldEnvelopes(ctx, "", "", 1000); err != nil || len(held) != 0 {
		t.Fatalf("%d envelopes still held, %v", len(held), err)
	}
}

// failForcedStore is a relay's real store whose first write applying a
// forced change fails.
type failForcedStore struct {
	relay.MeshStore
	failed atomic.Bool
}

func (s *failForcedStore) ApplyRemoteBatch(ctx context.Context, ins []relay.RemoteApply) ([]relay.ApplyResult, error) {
	for _, in := range ins {
		if in.Force && s.failed.CompareAndSwap(false, true) {
			return nil, errors.New("disk full")
		}
	}
	return s.MeshStore.ApplyRemoteBatch(ctx, ins)
}

// Ensure held lists whose changes wait for a message that never comes are
// applied anyway (forced), a refused change among them dropped with its
// list, and a store failure in the forced pass leaves every list held, to
// be released whole the next time (a review's case).
func TestForcedHeldListsSurviveAStoreFailure(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	var fs *failForcedStore
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) {
		fs = &failForcedStore{MeshStore: o.Store}
		o.Store = fs
	}, a.node.InviteURL())
	aliceMeetsBob(t, a, b)
	ctx := t.Context()
	chained, nobody := queuedTask("alice", "bob", "Chained"), queuedTask("alice", "nobody", "Nobody's")
	now := time.Now()
	const n = 3
	for k := 1; k <= n; k++ {
		fresh := queuedTask("alice", "bob", fmt.Sprintf("Fresh %d", k))
		changes := []relay.MeshChange{{Task: fresh, Seq: 1}, {Task: chained, Seq: int64(k + 1)}} // its first message never comes
		if k == 2 {
			changes = append(changes, relay.MeshChange{Task: nobody, Seq: 1})
		}
		items := rawItems(t, changes...)
		for j := range items {
			items[j].ID = fmt.Sprintf("m-%d-%d", k, j)
		}
		data, id, err := sealBatchAt(a.node.id, b.node.id.ID, items, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: id, FromRelay: a.node.id.ID, Reason: HeldKeyChange, TaskID: fresh.ID, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	applied := b.node.applied.Load()
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err == nil {
		t.Fatal("the forced write's failure was not reported")
	}
	if held, err := b.db.Mesh().HeldEnvelopes(ctx, "", "", 100); err != nil || len(held) != n {
		t.Fatalf("%d held, %v; want the %d lists kept after the failure", len(held), err, n)
	}
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err != nil {
		t.Fatal(err)
	}
	var last int64
	if err := rawDB(t, b).QueryRow(`SELECT in_seq FROM mesh_task_peers WHERE remote_id = ?`, chained.ID).Scan(&last); err != nil || last != n+1 {
		t.Fatalf("the chained task at message %d, %v; want %d", last, err, n+1)
	}
	if held, err := b.db.Mesh().HeldEnvelopes(ctx, "", "", 100); err != nil || len(held) != 0 {
		t.Fatalf("%d still held, %v", len(held), err)
	}
	if got := b.node.applied.Load() - applied; got != 2*n {
		t.Fatalf("applied %d changes; want %d (each list's fresh task and chained message)", got, 2*n)
	}
}
