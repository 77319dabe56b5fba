package mesh

import (
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure what a relay sent while not trusted is delivered in the order it
// arrived, whatever it was held for: a task held during a key change, then
// its cancel held while the relay was pending again, end cancelled (in
// another order the cancel finds no task and is refused).
func TestReleaseKeepsArrivalOrderAcrossReasons(t *testing.T) {
	a, b := aliceAndBob(t)
	ctx := t.Context()
	now := time.Now()
	task := queuedTask("alice", "bob", "Then cancelled")
	cancelled := task
	cancelled.Status = relay.StatusCancelled
	for _, h := range []struct {
		id, reason string
		change     relay.MeshChange
	}{
		{"first", HeldKeyChange, relay.MeshChange{Task: task}},
		{"second", HeldUntrusted, relay.MeshChange{Task: cancelled, Event: &relay.MeshEvent{ID: "second", RecipientSlug: "bob",
			Type: relay.EventTaskCancelled, Summary: "not needed", CreatedAt: relay.FormatTime(now)}}},
	} {
		data, err := sealAt(a.node.id, h.id, b.node.id.ID, h.change, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: h.id, FromRelay: a.node.id.ID, Reason: h.reason, TaskID: task.ID, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.node.releaseHeld(ctx, a.node.id.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := b.svc.Task(ctx, task.ID); err != nil || got.Status != relay.StatusCancelled {
		t.Fatalf("the task after release = %s, %v; want cancelled (refused %v)", got.Status, err, b.node.Refused())
	}
}
