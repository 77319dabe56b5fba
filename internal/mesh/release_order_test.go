package mesh

import (
	"context"
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
	a := startRelay(t, "relay-a", "")
	var counted *countingStore
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) {
		counted = &countingStore{MeshStore: o.Store}
		o.Store = counted
	}, a.node.InviteURL())
	aliceMeetsBob(t, a, b)
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
	before := counted.applies.Load()
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err != nil {
		t.Fatal(err)
	}
	writes := counted.applies.Load() - before
	if writes < n {
		t.Fatalf("releasing %d held envelopes took %d writes; the count misses some", n, writes)
	}
	if _, err := b.svc.Task(ctx, task.ID); err != nil {
		t.Fatalf("the task after release: %v", err)
	}
	var last int64
	if err := rawDB(t, b).QueryRow(`SELECT in_seq FROM mesh_task_peers WHERE remote_id = ?`, task.ID).Scan(&last); err != nil || last != n {
		t.Fatalf("the task's last message applied = %d, %v; want %d (all in order)", last, err, n)
	}
	if writes > 3*n {
		t.Fatalf("releasing %d held envelopes took %d writes; want at most %d", n, writes, 3*n)
	}
	if held, err := b.node.Held(ctx); err != nil || len(held) != 0 {
		t.Fatalf("%d envelopes still held, %v", len(held), err)
	}
}

// Ensure releasing held lists whose changes of one task are spread across
// them last first takes store writes in proportion to the lists: the
// waiting changes of all of them are tried in their task's order, not
// list by list (a review's case: n²/2 writes when lists were sorted by
// their first change).
func TestReleaseHeldListsIsLinear(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	var counted *countingStore
	b := startRelayWith(t, "relay-b", "", store.Options{}, func(o *Options) {
		counted = &countingStore{MeshStore: o.Store}
		o.Store = counted
	}, a.node.InviteURL())
	aliceMeetsBob(t, a, b)
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
	before := counted.applies.Load()
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err != nil {
		t.Fatal(err)
	}
	writes := counted.applies.Load() - before
	var last int64
	if err := rawDB(t, b).QueryRow(`SELECT in_seq FROM mesh_task_peers WHERE remote_id = ?`, chained.ID).Scan(&last); err != nil || last != n {
		t.Fatalf("the chained task's last message applied = %d, %v; want %d (all in order)", last, err, n)
	}
	if writes < n || writes > 3*n {
		t.Fatalf("releasing %d held lists took %d writes; want %d to %d", n, writes, n, 3*n)
	}
	if held, err := b.db.Mesh().HeldEnvelopes(ctx, "", "", 1000); err != nil || len(held) != 0 {
		t.Fatalf("%d envelopes still held, %v", len(held), err)
	}
}
