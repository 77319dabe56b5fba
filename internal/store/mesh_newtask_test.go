package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure a task another relay sends is queued here by when it arrived, not
// by the creation time its sender wrote: a trusted relay that backdated its
// tasks (or wrote something that is no time at all, which sorted first)
// had them claimed before tasks posted here earlier.
func TestRemoteTaskQueuedByArrival(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	e.register("carol")
	first := e.post("carol", "bob", "Posted here first", 2)
	var sent []string
	for i, created := range []string{"0", "", "not a date", "1970-01-01T00:00:00.000Z", relay.FormatTime(e.clock.Now().Add(-time.Hour)), "2999-01-01T00:00:00.000Z"} {
		e.clock.Advance(time.Second)
		task := relay.Task{ID: relay.NewID(), SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("From A, created %q", created), Instructions: "x",
			Priority: 2, Status: relay.StatusQueued, CreatedAt: created, UpdatedAt: created}
		before := e.clock.Now()
		if _, err := e.db.Mesh().ApplyRemote(e.ctx, relay.RemoteApply{MsgID: fmt.Sprint("m", i), FromRelay: relayA, FromLabel: "relay-a", Mark: relay.MarkVerified,
			Change: relay.MeshChange{Task: task}}); err != nil {
			t.Fatal(err)
		}
		after := e.clock.Now()
		got, err := e.db.Task(e.ctx, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if at, err := relay.ParseTime(got.CreatedAt); err != nil || at.Before(before.Truncate(time.Millisecond)) || at.After(after) {
			t.Errorf("task created %q by its sender is stored as created %q; want its arrival, between %s and %s",
				created, got.CreatedAt, relay.FormatTime(before), relay.FormatTime(after))
		}
		sent = append(sent, task.ID)
	}
	for i, want := range append([]string{first.ID}, sent...) {
		got := e.claim("bob")
		if got == nil || got.ID != want {
			t.Fatalf("claim %d = %+v; want %s (the order the tasks were posted or arrived in)", i, got, want)
		}
	}
}
