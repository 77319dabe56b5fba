package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// BenchmarkApplyRemote applies, one write each as they arrive, the changes
// of a task's trip across relays: on the owner's relay the new task (for
// bob, from carol of relay peerP; nobody waits for it), on the sender's
// relay its claimed and its completed state (for a task alice sent carol).
// It reports the store's time per change: the busiest writer of the mesh
// spends most of its time applying these.
func BenchmarkApplyRemote(b *testing.B) {
	ctx := context.Background()
	now := relay.FormatTime(time.Now())
	b.Run("new-task", func(b *testing.B) {
		db := openWith(b, "", "alice", "bob")
		syncCarol(b, db)
		b.ResetTimer()
		for i := range b.N {
			if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer(fmt.Sprintf("n%d", i), 1, arrivingFor(relay.NewID(), "bob"), nil)); !ok || err != nil {
				b.Fatalf("applied %v, %v", ok, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/change")
	})
	b.Run("claimed-completed", func(b *testing.B) {
		db := openWith(b, "", "alice", "bob")
		syncCarol(b, db)
		b.ResetTimer()
		for i := 0; i < b.N; {
			// Posted untimed, in rounds under the cap on a sender's open tasks.
			b.StopTimer()
			var sent []relay.Task
			for len(sent) < 500 && i+len(sent) < b.N {
				t, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "carol", Title: "Across", Instructions: "x"})
				if err != nil {
					b.Fatal(err)
				}
				sent = append(sent, t)
			}
			b.StartTimer()
			for _, t := range sent {
				claimed := ownerState(t, relay.StatusClaimed, relay.ViaChat, now, now, nil)
				done := ownerState(t, relay.StatusCompleted, relay.ViaChat, now, now,
					[]relay.Report{{ID: relay.NewID(), Kind: relay.ReportCompleted, Message: "done", CreatedAt: now}})
				for k, in := range []relay.RemoteApply{
					fromPeer(fmt.Sprintf("c%d", i), 1, claimed, eventFor("alice@relay-s", relay.EventTaskClaimed, now)),
					fromPeer(fmt.Sprintf("d%d", i), 2, done, eventFor("alice@relay-s", relay.EventTaskCompleted, now)),
				} {
					if ok, err := db.Mesh().ApplyRemote(ctx, in); !ok || err != nil {
						b.Fatalf("change %d applied %v, %v", k, ok, err)
					}
				}
				i++
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/change")
	})
}
