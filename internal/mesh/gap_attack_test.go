package mesh

import (
	"fmt"
	"testing"

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
	cons, err := jetStreamClient(t, url).Consumer(ctx, StreamName, consumerName(b.node.id.ID))
	if err != nil {
		t.Fatal(err)
	}
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
	if w := b.node.gaps.waiting(); w > gapRoom() {
		t.Fatalf("%d messages wait for an earlier one; want at most %d", w, gapRoom())
	}
	if got := onB(); got < consumeWindow/2 || got == consumeWindow {
		t.Fatalf("%d of C's %d gap messages applied; want those past half the window, the others waiting", got, consumeWindow)
	}
}
