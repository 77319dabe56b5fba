package store

// Hostile applies against the record of applied messages (written first,
// taken back with a refused change) and the ids new tasks and copied
// reports go in under.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// arrivingFor is a new task with id from carol of relay peerP for to.
func arrivingFor(id, to string) relay.Task {
	now := relay.FormatTime(time.Now())
	return relay.Task{ID: id, SenderSlug: "carol", RecipientSlug: to, Title: "Arriving " + id, Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now, Reports: []relay.Report{}}
}

// withLocalTask is sentToCarol with a task alice sent bob here, returned
// third.
func withLocalTask(t *testing.T) (*DB, relay.Task, relay.Task) {
	t.Helper()
	db, sent := sentToCarol(t, "")
	local, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Here", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return db, sent, local
}

// A refused change, or one out of order, leaves no record: the same message
// id with a good change is applied afterwards.
func TestRefusedMessageLeavesNoRecord(t *testing.T) {
	db, _ := sentToCarol(t, "")
	ctx := context.Background()
	var refusal *relay.MeshRefusal
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("x", 0, arrivingFor(relay.NewID(), "nobody"), nil)); ok || !errors.As(err, &refusal) {
		t.Fatalf("refused: %v %v", ok, err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM mesh_applied WHERE msg_id = 'x'`); n != 0 {
		t.Fatalf("refused message recorded: %d", n)
	}
	id := relay.NewID()
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("y", 3, arrivingFor(id, "bob"), nil)); ok || !errors.Is(err, relay.ErrEarlierMissing) {
		t.Fatalf("out of order: %v %v", ok, err)
	}
	for _, msg := range []string{"x", "y"} {
		if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer(msg, 1, arrivingFor(relay.NewID(), "bob"), nil)); !ok || err != nil {
			t.Fatalf("%s good after refused: %v %v", msg, ok, err)
		}
	}
	// A local task's id, refused (recipient not here): the local task is untouched, no record.
	local, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Here", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("z", 0, arrivingFor(strings.ToUpper(local.ID), "nobody"), nil)); ok || !errors.As(err, &refusal) || refusal.Reason != "local-task" {
		t.Fatalf("refused local id: %v %v", ok, err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM mesh_applied WHERE msg_id = 'z'`); n != 0 {
		t.Fatalf("refused message recorded: %d", n)
	}
}

// The same message id from two relays: both applied; again: neither.
func TestSameMessageIDFromTwoRelays(t *testing.T) {
	db, _ := sentToCarol(t, "")
	ctx := context.Background()
	a, b := fromPeer("m", 0, arrivingFor(relay.NewID(), "bob"), nil), fromPeer("m", 0, arrivingFor(relay.NewID(), "bob"), nil)
	b.FromRelay = "qq00000000000000"
	res, err := db.Mesh().ApplyRemoteBatch(ctx, []relay.RemoteApply{a, b, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Applied || !res[1].Applied || res[2].Applied || res[3].Applied || res[2].Err != nil || res[3].Err != nil {
		t.Fatalf("results %+v", res)
	}
}

// An upper-case task id: stored under its lower-case form, recorded under
// it, its push entry made once; delivered again: nothing.
func TestUpperCaseTaskIDRecordedLowerCase(t *testing.T) {
	db, _ := sentToCarol(t, "")
	ctx := context.Background()
	if _, err := db.OpenPush(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	pushes := func() int {
		return countRows(t, db, `SELECT count(*) FROM push_events WHERE agent_slug = 'bob' AND kind = 'task'`)
	}
	before := pushes()
	id := relay.NewID()
	in := fromPeer("u", 1, arrivingFor(strings.ToUpper(id), "bob"), nil)
	if ok, err := db.Mesh().ApplyRemote(ctx, in); !ok || err != nil {
		t.Fatalf("applied %v %v", ok, err)
	}
	if got := countRows(t, db, `SELECT count(*) FROM mesh_applied WHERE msg_id = 'u' AND task_id = ?`, id); got != 1 {
		t.Errorf("record not under %s", id)
	}
	if got := pushes() - before; got != 1 {
		t.Errorf("push entries %d, want 1", got)
	}
	// The id of a local task: stored under a new id, one push entry.
	local, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Here", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	before = pushes()
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("v", 1, arrivingFor(strings.ToUpper(local.ID), "bob"), nil)); !ok || err != nil {
		t.Fatalf("applied %v %v", ok, err)
	}
	if got := pushes() - before; got != 1 {
		t.Errorf("push entries %d, want 1", got)
	}
	if got, _ := db.Task(ctx, local.ID); got.Title != "Here" {
		t.Errorf("local task changed: %+v", got)
	}
	for _, msg := range []string{"u", "v"} {
		in.MsgID = msg
		if ok, err := db.Mesh().ApplyRemote(ctx, in); ok || err != nil {
			t.Fatalf("again %s: %v %v", msg, ok, err)
		}
	}
}

// Reports: the same report twice in one change, one whose id is another
// task's report, one not a UUID, one upper-case; as returned is as stored;
// again: none added.
func TestCopiedReportIDs(t *testing.T) {
	db, sent := sentToCarol(t, "")
	ctx := context.Background()
	// Another task here with a report.
	other, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Other", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: other.ID, Kind: relay.ReportProgress, Message: "mine"}); err != nil {
		t.Fatal(err)
	}
	ot, err := db.Task(ctx, other.ID)
	if err != nil || len(ot.Reports) != 1 {
		t.Fatalf("other: %+v %v", ot, err)
	}
	now := relay.FormatTime(time.Now())
	r1 := relay.NewID()
	reports := []relay.Report{
		{ID: r1, Kind: relay.ReportProgress, Message: "one", CreatedAt: now},
		{ID: r1, Kind: relay.ReportProgress, Message: "one again", CreatedAt: now},
		{ID: ot.Reports[0].ID, Kind: relay.ReportProgress, Message: "stolen id", CreatedAt: now},
		{ID: "not-a-uuid", Kind: relay.ReportProgress, Message: "odd id", CreatedAt: now},
		{ID: strings.ToUpper(relay.NewID()), Kind: relay.ReportProgress, Message: "upper", CreatedAt: now},
	}
	claimedAt := now
	st := ownerState(sent, relay.StatusClaimed, relay.ViaChat, claimedAt, now, reports)
	ch, cancel := db.Subscribe(256)
	defer cancel()
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("r1", 1, st, nil)); !ok || err != nil {
		t.Fatalf("applied %v %v", ok, err)
	}
	got, err := db.Task(ctx, sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Reports) != 4 {
		t.Fatalf("stored %d reports, want 4: %+v", len(got.Reports), got.Reports)
	}
	publishedAsStored(t, db, ch, "reports", sent.ID)
	if ot2, _ := db.Task(ctx, other.ID); len(ot2.Reports) != 1 || ot2.Reports[0].Message != "mine" {
		t.Errorf("other task's reports: %+v", ot2.Reports)
	}
	if _, err := relay.TaskID("reportId", got.Reports[1].ID); err != nil || got.Reports[1].ID == ot.Reports[0].ID {
		t.Errorf("stolen id stored as %s", got.Reports[1].ID)
	}
	// Again, later, with one more: only the new one is added, and a
	// report whose id is the derived id of the stolen one.
	st.Reports = append(st.Reports, relay.Report{ID: relay.NewID(), Kind: relay.ReportProgress, Message: "new", CreatedAt: now})
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("r2", 2, st, nil)); !ok || err != nil {
		t.Fatalf("applied %v %v", ok, err)
	}
	got, _ = db.Task(ctx, sent.ID)
	if len(got.Reports) != 5 {
		t.Fatalf("stored %d reports, want 5", len(got.Reports))
	}
	publishedAsStored(t, db, ch, "reports again", sent.ID)
}

// The same message id from two relays, the second about a task whose id a
// task here has: each record keeps its own relay's task.
func TestAppliedRecordsScopedByRelay(t *testing.T) {
	db, _, local := withLocalTask(t)
	ctx := context.Background()
	free := relay.NewID()
	a, b := fromPeer("m", 0, arrivingFor(free, "bob"), nil), fromPeer("m", 0, arrivingFor(local.ID, "bob"), nil)
	b.FromRelay = "qq00000000000000"
	for _, in := range []relay.RemoteApply{a, b} {
		if ok, err := db.Mesh().ApplyRemote(ctx, in); !ok || err != nil {
			t.Fatalf("%s: %v %v", in.FromRelay, ok, err)
		}
	}
	var got string
	if err := db.r.QueryRowContext(ctx, `SELECT task_id FROM mesh_applied WHERE from_relay = ? AND msg_id = 'm'`, peerP).Scan(&got); err != nil || got != free {
		t.Errorf("relay P's record names %q, %v; want %s", got, err, free)
	}
}

// TestAppliedRecordNamesTheLocalTask: a message is recorded as applied
// before its change is (the record tells whether it came before), under
// its task's id, and then under the task's local id where that differs: a
// new task whose id a task here has already, and a message with nothing
// this relay can store (no task).
func TestAppliedRecordNamesTheLocalTask(t *testing.T) {
	db, _, local := withLocalTask(t)
	ctx := context.Background()
	now := relay.FormatTime(time.Now())
	arriving := func(id string) relay.Task {
		return relay.Task{ID: id, SenderSlug: "carol", RecipientSlug: "bob", Title: "Arriving", Instructions: "x",
			Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now, Reports: []relay.Report{}}
	}
	fresh := relay.NewID()
	cases := []struct {
		msg  string
		task relay.Task
		want func(string) bool // the record's task id
	}{
		{"free", arriving(fresh), func(id string) bool { return id == fresh }},
		{"taken", arriving(local.ID), func(id string) bool { return id != local.ID && id != "" }},
		{"no task", arriving("not-a-task-id"), func(id string) bool { return id == "" }},
	}
	for _, tc := range cases {
		if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer(tc.msg, 0, tc.task, nil)); !ok || err != nil {
			t.Fatalf("%s: applied %v, %v", tc.msg, ok, err)
		}
		var id string
		if err := db.r.QueryRowContext(ctx, `SELECT task_id FROM mesh_applied WHERE from_relay = ? AND msg_id = ?`, peerP, tc.msg).Scan(&id); err != nil {
			t.Fatalf("%s: %v", tc.msg, err)
		}
		if !tc.want(id) {
			t.Errorf("%s: recorded under task %q", tc.msg, id)
		}
		if tc.msg == "taken" {
			if got, err := db.Task(ctx, id); err != nil || got.Title != "Arriving" {
				t.Errorf("taken: the record's task %s = %+v, %v; want the arriving task", id, got, err)
			}
		}
	}
}

// A new task from another relay for a retired agent here is blocked at
// once, saying so, as its tasks were at its retirement: nothing here would
// take it (its worker is off), and its sender learns of it through the
// task's state, where it would wait for ever. The retired agent leaves the
// agents the directory shows; reinstated, it takes the next task.
func TestRemoteTaskForRetiredAgentBlocked(t *testing.T) {
	db, _ := sentToCarol(t, "")
	ctx := context.Background()
	waiting, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Waits", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RetireAgent(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	// Its sender requeued it, to wait for bob's reinstatement: the task
	// that arrives next leaves it waiting.
	if _, err := db.RequeueTask(ctx, "alice", waiting.ID, "wait for bob"); err != nil {
		t.Fatal(err)
	}
	id := relay.NewID()
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("r1", 0, arrivingFor(id, "bob"), nil)); !ok || err != nil {
		t.Fatalf("a task for the retired bob: %v %v", ok, err)
	}
	task, err := db.Task(ctx, id)
	if err != nil || task.Status != relay.StatusBlocked || len(task.Reports) == 0 || !strings.Contains(task.Reports[len(task.Reports)-1].Message, "bob was retired") {
		t.Fatalf("the task for the retired bob: %+v %v; want it blocked, saying why", task, err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM mesh_outbox WHERE task_id = '`+id+`'`); n == 0 {
		t.Fatal("the blocked state is not on its way to the sender's relay")
	}
	if w, err := db.Task(ctx, waiting.ID); err != nil || w.Status != relay.StatusQueued {
		t.Fatalf("the task requeued to wait for bob: %+v %v; want it still queued", w, err)
	}
	if agents, err := db.Mesh().LocalAgents(ctx); err != nil || slices.ContainsFunc(agents, func(a relay.Agent) bool { return a.Slug == "bob" }) {
		t.Fatalf("the directory's agents list the retired bob: %v %v", agents, err)
	}
	if _, err := db.ReinstateAgent(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	next := relay.NewID()
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("r2", 0, arrivingFor(next, "bob"), nil)); !ok || err != nil {
		t.Fatalf("a task for bob reinstated: %v %v", ok, err)
	}
	if task, err := db.Task(ctx, next); err != nil || task.Status != relay.StatusQueued {
		t.Fatalf("the task for bob reinstated: %+v %v; want it queued", task, err)
	}
}
