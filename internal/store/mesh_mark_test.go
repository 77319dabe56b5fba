package store

import (
	"context"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestTaskMarkFollowsEachChange holds a remote task's signature mark to
// the last change applied to it: an unchanged mark is not written again
// (TestApplyStatements), a changed one is.
func TestTaskMarkFollowsEachChange(t *testing.T) {
	db, sent := sentToCarol(t, "")
	ctx := context.Background()
	now := relay.FormatTime(time.Now())
	for i, step := range []struct {
		status relay.TaskStatus
		mark   string
	}{
		{relay.StatusClaimed, relay.MarkVerified},
		{relay.StatusClaimed, relay.MarkVerified},
		{relay.StatusClaimed, relay.MarkMismatch},
		{relay.StatusCompleted, relay.MarkVerified},
	} {
		in := fromPeer(relay.NewID(), int64(i+1), ownerState(sent, step.status, relay.ViaChat, now, now, nil), nil)
		in.Mark = step.mark
		if ok, err := db.Mesh().ApplyRemote(ctx, in); !ok || err != nil {
			t.Fatalf("change %d: applied %v, %v", i+1, ok, err)
		}
		if got, err := db.Mesh().TaskMark(ctx, sent.ID); err != nil || got != step.mark {
			t.Errorf("after change %d (%s): mark %q, %v; want %q", i+1, step.mark, got, err, step.mark)
		}
	}
}
