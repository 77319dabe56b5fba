package store_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func TestLifecycleClaimOnceAndChangeOnlyUpdates(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob")
	posted := e.post("alice", "bob", "Write the report", 0)
	if posted.Status != relay.StatusQueued || posted.Priority != relay.PriorityNormal || len(posted.Reports) != 0 || posted.Depth != 0 {
		t.Fatalf("posted task = %+v", posted)
	}
	if u := e.updates("alice"); len(u.Updates) != 0 {
		t.Fatalf("posting created events: %+v", u.Updates)
	}

	got := e.mustClaim("bob")
	if got.ID != posted.ID || got.Status != relay.StatusClaimed || got.ClaimedVia != relay.ViaChat || got.LeaseExpiresAt == "" || got.ClaimedAt == "" {
		t.Fatalf("claimed = %+v", got)
	}
	if again := e.claim("bob"); again != nil {
		t.Fatalf("second claim got %s", again.ID)
	}
	u := e.updates("alice")
	if !equalStrings(eventTypes(u.Updates), []string{relay.EventTaskClaimed}) {
		t.Fatalf("alice updates after claim = %v", eventTypes(u.Updates))
	}
	if want := "bob claimed “Write the report”."; u.Updates[0].Summary != want {
		t.Fatalf("summary = %q, want %q", u.Updates[0].Summary, want)
	}
	if u.Cursor != u.Updates[0].Sequence || u.MayHaveMissedUpdates {
		t.Fatalf("cursor = %d, flag %v", u.Cursor, u.MayHaveMissedUpdates)
	}

	done, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: posted.ID, Kind: relay.ReportCompleted, Message: "Done.", Result: "42"})
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != relay.StatusCompleted || done.LeaseExpiresAt != "" || done.ClaimedAt == "" || done.ClaimedVia != relay.ViaChat {
		t.Fatalf("completed task = %+v", done)
	}
	if len(done.Reports) != 1 || done.Reports[0].Kind != relay.ReportCompleted || done.Reports[0].Result != "42" {
		t.Fatalf("reports = %+v", done.Reports)
	}
	u = e.updates("alice")
	if !equalStrings(eventTypes(u.Updates), []string{relay.EventTaskCompleted}) || u.Updates[0].Summary != "bob: Done." {
		t.Fatalf("alice updates after completion = %+v", u.Updates)
	}
	if u := e.updates("alice"); len(u.Updates) != 0 {
		t.Fatalf("updates delivered twice: %+v", u.Updates)
	}
	if u := e.updates("bob"); len(u.Updates) != 0 {
		t.Fatalf("bob got updates: %+v", u.Updates)
	}
}
