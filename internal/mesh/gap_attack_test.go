package mesh

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Messages that wait for an earlier message of their task (a gap in the
// task's numbers) wait in the consumer's window; whoever makes the gaps,
// a relay on purpose or bad luck, they never take the whole window.

// Ensure a trusted relay that sends a window's worth of messages each with
// a gap before it (number 5 of new tasks, no 1 to 4) does not stop other
// relays' messages: those waiting for an earlier one take at most half the
// window, the rest of the gap messages are applied at once (their task's
// state is never taken back by a late earlier one), and a task another
// relay posts meanwhile arrives.
func TestGapMessagesCannotFillTheWindow(t *testing.T) {
	oldWindow, oldGap := consumeWindow, gapDeliveries
	consumeWindow, gapDeliveries = 8, 1000 // a gap would otherwise hold its place for 1000 s
	t.Cleanup(func() { consumeWindow, gapDeliveries = oldWindow, oldGap })
	a, b := aliceAndBob(t)
	url := a.node.InviteURL()
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, b, c)
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	// A fresh client for each try: on a loaded machine the in-process
	// connection was once found closed at its first request.
	var cons jetstream.Consumer
	eventually(t, "B's consumer, read by a client of the server", func() (bool, string) {
		c, err := jetStreamClient(t, url).Consumer(ctx, StreamName, consumerName(b.node.id.ID))
		cons = c
		return err == nil, fmt.Sprint(err)
	})
	var gapped []string
	for i := range consumeWindow {
		task := queuedTask("mallory", "bob", fmt.Sprintf("Gap %d", i))
		gapped = append(gapped, task.ID)
		send(t, url, c.node.id, fmt.Sprintf("c-gap-%d", i), b, relay.MeshChange{Task: task, Seq: 5})
	}
	onB := func() int {
		n := 0
		for _, id := range gapped {
			if _, err := b.svc.Task(ctx, id); err == nil {
				n++
			}
		}
		return n
	}
	eventually(t, "C's gap messages delivered to B", func() (bool, string) {
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return info.NumAckPending+onB() >= consumeWindow && info.NumPending == 0, fmt.Sprintf("%d pending ack, %d not delivered, %d applied", info.NumAckPending, info.NumPending, onB())
	})
	task := post(t, a, "alice", "bob", "Past the gaps")
	arrives(t, b, task.ID)
	if w, mine := b.node.gaps.waiting(""), b.node.gaps.waiting(c.node.id.ID); w > gapRoom() || mine > gapShare() {
		t.Fatalf("%d messages wait for an earlier one, %d of C's; want at most %d, %d of one relay", w, mine, gapRoom(), gapShare())
	}
	if got := onB(); got < consumeWindow-gapShare() || got == consumeWindow {
		t.Fatalf("%d of C's %d gap messages applied; want those past C's share, the others waiting", got, consumeWindow)
	}

	// A's own gap still waits in A's share: its task's cancel, sent
	// before the task, is not applied until the task is.
	mine := queuedTask("alice", "bob", "Cancel before the task")
	gone := mine
	gone.Status = relay.StatusCancelled
	ev := &relay.MeshEvent{ID: "a-cancel", RecipientSlug: "bob", Type: relay.EventTaskCancelled, Summary: "not needed", CreatedAt: gone.UpdatedAt}
	send(t, url, a.node.id, "a-cancel", b, relay.MeshChange{Task: gone, Event: ev, Seq: 2})
	eventually(t, "A's cancel waits for its task", func() (bool, string) {
		return b.node.gaps.waiting(a.node.id.ID) == 1, fmt.Sprint(b.node.gaps.waiting(a.node.id.ID), " of A's waiting")
	})
	if got, err := b.svc.Task(ctx, mine.ID); err == nil {
		t.Fatalf("the cancel was applied before its task: %s", got.Status)
	}
	send(t, url, a.node.id, "a-task", b, relay.MeshChange{Task: mine, Seq: 1})
	reaches(t, b, mine.ID, relay.StatusCancelled)
}
