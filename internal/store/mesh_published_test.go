package store

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// peerP is the id of the other relay in this file's tests.
const peerP = "pp00000000000000"

// fromPeer is relay peerP's message msg, number seq of its task.
func fromPeer(msg string, seq int64, task relay.Task, ev *relay.MeshEvent) relay.RemoteApply {
	return relay.RemoteApply{MsgID: msg, FromRelay: peerP, FromName: "relay-p", FromLabel: "relay-p", SelfID: "ss00000000000000", SelfName: "relay-s",
		Mark: relay.MarkVerified, Change: relay.MeshChange{Task: task, Event: ev, Seq: seq}}
}

// syncCarol tells db of carol, an agent of relay peerP.
func syncCarol(t testing.TB, db *DB) {
	t.Helper()
	if _, err := db.Mesh().SyncRemoteAgents(context.Background(), []relay.RemoteAgent{{Slug: "carol", DisplayName: "Carol", ModelSlug: "m",
		RelayID: peerP, RelayName: "relay-p", RelayLabel: "relay-p", Online: true}}); err != nil {
		t.Fatal(err)
	}
}

// sentToCarol opens a store on driver ("" for the relay's own) with alice,
// bob and carol of relay peerP, and returns it with a task alice sent
// carol.
func sentToCarol(t *testing.T, driver string) (*DB, relay.Task) {
	t.Helper()
	db := openWith(t, driver, "alice", "bob")
	syncCarol(t, db)
	sent, err := db.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "carol", Title: "Across", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return db, sent
}

// ownerState is task, which alice sent to relay peerP, as peerP (its owner)
// sends it back: in status, claimed at claimedAt via via, changed at
// updatedAt, with reports.
func ownerState(task relay.Task, status relay.TaskStatus, via, claimedAt, updatedAt string, reports []relay.Report) relay.Task {
	task.SenderSlug, task.Status, task.ClaimedAt, task.ClaimedVia, task.UpdatedAt, task.Reports = "alice@relay-s", status, claimedAt, via, updatedAt, reports
	return task
}

// eventFor is relay peerP's journal entry of type typ for to.
func eventFor(to, typ, at string) *relay.MeshEvent {
	return &relay.MeshEvent{ID: relay.NewID(), RecipientSlug: to, Type: typ, Summary: typ, CreatedAt: at}
}

// publishedAsStored fails t unless the last summary of task id published on
// changes so far is the one a read of the database gives.
func publishedAsStored(t *testing.T, db *DB, changes <-chan relay.Change, step, id string) {
	t.Helper()
	published, ok := lastPublished(changes, id)
	if !ok {
		t.Errorf("%s: nothing published for task %s", step, id)
		return
	}
	all, err := db.ListTasks(context.Background(), relay.TaskFilter{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, stored := range all {
		if stored.ID == id {
			if !reflect.DeepEqual(published, stored) {
				t.Errorf("%s: published\n%+v\nstored\n%+v", step, published, stored)
			}
			return
		}
	}
	t.Errorf("%s: task %s not stored", step, id)
}

// handedAsStored fails t unless o, a waiting claim's answer, is task id as
// stored.
func handedAsStored(t *testing.T, db *DB, step string, o claimOutcome, id string) {
	t.Helper()
	stored, err := db.Task(context.Background(), id)
	if err != nil || o.err != nil || o.task == nil || !reflect.DeepEqual(*o.task, stored) {
		t.Errorf("%s: the waiting claim got\n%+v (%v)\nstored\n%+v (%v)", step, o.task, o.err, stored, err)
	}
}

// lastPublished is the last summary of task id among the changes received
// so far (ok false if none).
func lastPublished(changes <-chan relay.Change, id string) (s relay.TaskSummary, ok bool) {
	for {
		select {
		case c := <-changes:
			if c.Type == relay.ChangeTask && c.Task != nil && c.Task.ID == id {
				s, ok = *c.Task, true
			}
		default:
			return s, ok
		}
	}
}

// Ensure every change another relay's message makes publishes its task as
// stored. An apply publishes what it wrote without reading the task back
// (a new task, a mirror's new state, a sender's cancel or requeue, one that
// changes nothing), so the live views would drift from the database if it
// got one field wrong; and a waiting claim handed a task that arrived gets
// the task as stored.
func TestAppliedTaskPublishedAsStored(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	syncCarol(t, db)
	changes, stop := db.Subscribe(256)
	defer stop()
	at := func() string { return relay.FormatTime(time.Now()) }
	report := func(kind, msg string) relay.Report {
		return relay.Report{ID: relay.NewID(), Kind: kind, Message: msg, Result: "r", CreatedAt: at()}
	}
	check := func(step, id string) {
		t.Helper()
		publishedAsStored(t, db, changes, step, id)
	}
	apply := func(step string, in relay.RemoteApply) {
		t.Helper()
		if ok, err := db.Mesh().ApplyRemote(ctx, in); !ok || err != nil {
			t.Fatalf("%s: applied %v, %v", step, ok, err)
		}
	}
	newTask := func(title string) relay.Task {
		return relay.Task{ID: relay.NewID(), SenderSlug: "dave", RecipientSlug: "bob", Title: title, Instructions: "Do it.",
			RequiredCapabilities: []string{"text-input"}, Priority: 3, Status: relay.StatusQueued, CreatedAt: at(), UpdatedAt: at(),
			Depth: 1, Hops: 2, TargetSession: "s-1", Reports: []relay.Report{report(relay.ReportChanges, "asked before")}}
	}

	// A new task owned here, nobody waiting; then its sender cancels it,
	// and cancels it again (nothing changes: the sender is sent the state).
	queued := newTask("Queued")
	apply("new task", fromPeer("n1", 1, queued, nil))
	check("new task", queued.ID)
	cancelled := queued
	cancelled.Status, cancelled.Reports = relay.StatusCancelled, append(queued.Reports, report(relay.ReportChanges, "why not"))
	apply("cancel", fromPeer("n2", 2, cancelled, eventFor("bob", relay.EventTaskCancelled, at())))
	check("cancel", queued.ID)
	apply("cancel again", fromPeer("n3", 3, cancelled, eventFor("bob", relay.EventTaskCancelled, at())))
	check("cancel again", queued.ID)

	// A new task handed to a waiting claim; completed here, then requeued
	// by its sender.
	got := claimAsync(db, relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second})
	waitParked(t, db, "bob", 1)
	handed := newTask("Handed")
	handed.TargetSession = ""
	apply("new task handed", fromPeer("h1", 1, handed, nil))
	handedAsStored(t, db, "new task handed", answer(t, got), handed.ID)
	check("new task handed", handed.ID)
	if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: handed.ID, Kind: relay.ReportCompleted, Message: "done"}); err != nil {
		t.Fatal(err)
	}
	check("completed", handed.ID)
	requeued := handed
	requeued.Status = relay.StatusQueued
	apply("requeue", fromPeer("h2", 2, requeued, eventFor("bob", relay.EventTaskRequeued, at())))
	if s, _ := db.Task(ctx, handed.ID); s.Status != relay.StatusQueued {
		t.Fatalf("after the requeue the task is %s", s.Status)
	}
	check("requeue", handed.ID)

	// Alice's task to carol on the other relay: its owner's states, the
	// second with a report, then the first again (stale: its report is
	// added, the state kept).
	sent, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "carol", Title: "Across", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	check("sent", sent.ID)
	owner := func(status relay.TaskStatus, reports ...relay.Report) relay.Task {
		return ownerState(sent, status, relay.ViaWorker, at(), at(), reports)
	}
	toAlice := func(typ string) *relay.MeshEvent { return eventFor("alice@relay-s", typ, at()) }
	progress := report(relay.ReportProgress, "half")
	late := report(relay.ReportProgress, "late")
	apply("claimed", fromPeer("s1", 1, owner(relay.StatusClaimed), toAlice(relay.EventTaskClaimed)))
	check("claimed", sent.ID)
	done := fromPeer("s3", 3, owner(relay.StatusCompleted, progress, report(relay.ReportCompleted, "done")), toAlice(relay.EventTaskCompleted))
	done.Force = true // number 2 comes after it
	apply("completed", done)
	check("completed", sent.ID)
	apply("stale", fromPeer("s2", 2, owner(relay.StatusClaimed, progress, late), toAlice(relay.EventTaskProgress)))
	if s, _ := db.Task(ctx, sent.ID); s.Status != relay.StatusCompleted || len(s.Reports) != 3 {
		t.Fatalf("after the stale state the task is %s with %d reports; want completed with 3", s.Status, len(s.Reports))
	}
	check("stale", sent.ID)
}

// Ensure a task another relay sends under an upper-case UUID is stored under
// the id's usual form: every reader lower-cases the ids it is given, so a
// task stored as sent could be claimed and then neither read nor reported
// on.
func TestUppercaseRemoteIDReachable(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	at := relay.FormatTime(time.Now())
	rt := relay.Task{ID: strings.ToUpper(relay.NewID()), SenderSlug: "dave", RecipientSlug: "bob", Title: "Upper", Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: at, UpdatedAt: at}
	if ok, err := db.Mesh().ApplyRemote(ctx, fromPeer("u1", 1, rt, nil)); !ok || err != nil {
		t.Fatalf("applied %v, %v", ok, err)
	}
	claimed, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"})
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	if _, err := db.Task(ctx, claimed.ID); err != nil {
		t.Errorf("the claimed task %s cannot be read: %v", claimed.ID, err)
	}
	if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: claimed.ID, Kind: relay.ReportCompleted, Message: "done"}); err != nil {
		t.Errorf("the claimed task %s cannot be completed: %v", claimed.ID, err)
	}
}
