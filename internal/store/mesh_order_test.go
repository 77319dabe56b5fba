package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Per-task order in the mesh: each message one relay sends another about a
// task is numbered, and the receiving store applies a task's messages in
// their order, whatever order they come in.

// remoteTask is a task relay A's agent alice posted to bob, as A sends it.
func remoteTask(e *env, title string) relay.Task {
	now := relay.FormatTime(e.clock.Now())
	return relay.Task{ID: relay.NewID(), SenderSlug: "alice", RecipientSlug: "bob", Title: title, Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now, Reports: []relay.Report{}}
}

// fromA is relay A's message msg about task at number seq.
func fromA(msg string, seq int64, task relay.Task, ev *relay.MeshEvent) relay.RemoteApply {
	return relay.RemoteApply{MsgID: msg, FromRelay: relayA, FromName: "relay-a", FromLabel: "relay-a", SelfID: relayC, SelfName: "relay-c",
		Mark: relay.MarkVerified, Change: relay.MeshChange{Task: task, Event: ev, Seq: seq}}
}

// cancelled is task as its sender's relay sends its cancel.
func cancelled(task relay.Task) (relay.Task, *relay.MeshEvent) {
	task.Status = relay.StatusCancelled
	return task, &relay.MeshEvent{ID: relay.NewID(), RecipientSlug: "bob", Type: relay.EventTaskCancelled, Summary: "not needed", CreatedAt: task.UpdatedAt}
}

// sentToA is a store where alice posted a task titled title to relay A's
// bob, and that task.
func sentToA(t *testing.T, title string) (*env, relay.Task) {
	t.Helper()
	e := newEnv(t, store.Options{})
	e.register("alice")
	if _, err := e.db.Mesh().SyncRemoteAgents(e.ctx, []relay.RemoteAgent{remote(relayA, "relay-a", "bob")}); err != nil {
		t.Fatal(err)
	}
	return e, e.post("alice", "bob", title, 0)
}

// asOwner is alice's task as relay A, which owns it, sends it back in
// status (claimed at at, by chat), naming her as A does.
func asOwner(task relay.Task, status relay.TaskStatus, at string) relay.Task {
	task.SenderSlug = "alice@relay-c"
	task.Status, task.ClaimedAt, task.ClaimedVia = status, at, relay.ViaChat
	return task
}

// toAlice is relay A's journal entry of type typ for alice, as A names her.
func toAlice(typ, at string) *relay.MeshEvent {
	return &relay.MeshEvent{ID: relay.NewID(), RecipientSlug: "alice@relay-c", Type: typ, Summary: typ, CreatedAt: at}
}

// Ensure a batch in which one message fails to apply commits the others,
// rolls the failed one back alone (nothing of it stored, not recorded as
// applied), holds its task's later message back until it is applied, and
// that delivering the whole batch again changes nothing.
func TestApplyBatchOneFails(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	raw := rawDB(t, e.path)
	t1, t2, t3 := remoteTask(e, "first"), remoteTask(e, "boom"), remoteTask(e, "third")
	// It fails at its last step: the message is recorded as applied and
	// the task written, then marking it fails.
	if _, err := raw.Exec(`CREATE TRIGGER fail_boom BEFORE INSERT ON mesh_tasks WHEN NEW.task_id = '` + t2.ID + `' BEGIN SELECT RAISE(ABORT, 'the disk said no'); END`); err != nil {
		t.Fatal(err)
	}
	c2, ev := cancelled(t2)
	batch := []relay.RemoteApply{fromA("m1", 1, t1, nil), fromA("m2", 1, t2, nil), fromA("m2-cancel", 2, c2, ev), fromA("m3", 1, t3, nil)}
	changes, stop := e.db.Subscribe(256)
	defer stop()
	res, err := e.db.Mesh().ApplyRemoteBatch(e.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for len(changes) > 0 {
		if c := <-changes; c.Type == relay.ChangeTask && c.Task != nil && c.Task.ID == t2.ID {
			t.Fatalf("the rolled back task was published: %+v", *c.Task)
		}
	}
	var refusal *relay.MeshRefusal
	if !res[0].Applied || res[0].Err != nil || !res[3].Applied || res[3].Err != nil {
		t.Fatalf("the messages around the failure: %+v, %+v; want applied", res[0], res[3])
	}
	if res[1].Applied || res[1].Err == nil || errors.As(res[1].Err, &refusal) || errors.Is(res[1].Err, relay.ErrEarlierMissing) {
		t.Fatalf("the failing message: %+v; want a store failure", res[1])
	}
	if res[2].Applied || !errors.Is(res[2].Err, relay.ErrEarlierMissing) {
		t.Fatalf("its task's cancel: %+v; want it to wait for the task", res[2])
	}
	titles := func() []string {
		ts, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Agent: "bob", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range ts {
			out = append(out, s.Title+":"+string(s.Status))
		}
		slices.Sort(out)
		return out
	}
	if got := titles(); !slices.Equal(got, []string{"first:queued", "third:queued"}) {
		t.Fatalf("tasks after the batch = %v", got)
	}
	var applied int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM mesh_applied WHERE msg_id IN ('m2', 'm2-cancel')`).Scan(&applied); err != nil || applied != 0 {
		t.Fatalf("the failed messages recorded as applied: %d, %v", applied, err)
	}

	// The failure passes; the batch comes again, as NATS delivers what was
	// not acknowledged (and, here, what was).
	if _, err := raw.Exec(`DROP TRIGGER fail_boom`); err != nil {
		t.Fatal(err)
	}
	res, err = e.db.Mesh().ApplyRemoteBatch(e.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, true, false} {
		if res[i].Err != nil || res[i].Applied != want {
			t.Fatalf("again, message %d: %+v; want applied %v", i, res[i], want)
		}
	}
	if got := titles(); !slices.Equal(got, []string{"boom:cancelled", "first:queued", "third:queued"}) {
		t.Fatalf("tasks after the batch again = %v", got)
	}
	if got := eventTypes(e.updates("bob").Updates); !slices.Equal(got, []string{relay.EventTaskCancelled}) {
		t.Fatalf("bob's updates = %v; want the one cancel", got)
	}
}

// Ensure a task's messages are applied in their order: one that comes
// before an earlier one waits; forced (the earlier one waited for long
// enough), it is applied, and the earlier one coming after it adds its
// journal entry without taking the task's state back; a redelivered
// message changes nothing.
func TestApplyInTaskOrder(t *testing.T) {
	e, task := sentToA(t, "Across")
	now := relay.FormatTime(e.clock.Now())
	claimed, done := asOwner(task, relay.StatusClaimed, now), asOwner(task, relay.StatusCompleted, now)
	done.Reports = []relay.Report{{ID: relay.NewID(), Kind: relay.ReportCompleted, Message: "done", CreatedAt: now}}
	first, second := fromA("claimed", 1, claimed, toAlice(relay.EventTaskClaimed, now)), fromA("completed", 2, done, toAlice(relay.EventTaskCompleted, now))

	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, second); ok || !errors.Is(err, relay.ErrEarlierMissing) {
		t.Fatalf("the second message first = %v, %v; want it to wait", ok, err)
	}
	if got := e.task(task.ID); got.Status != relay.StatusQueued || len(e.updates("alice").Updates) != 0 {
		t.Fatalf("after the early message: %s, %v", got.Status, e.updates("alice").Updates)
	}
	second.Force = true
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, second); !ok || err != nil {
		t.Fatalf("the second message forced = %v, %v", ok, err)
	}
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, first); !ok || err != nil {
		t.Fatalf("the first message after it = %v, %v", ok, err)
	}
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, second); ok || err != nil {
		t.Fatalf("the second message again = %v, %v; want recognised", ok, err)
	}
	got := e.task(task.ID)
	if got.Status != relay.StatusCompleted || len(got.Reports) != 1 {
		t.Fatalf("the task = %s with %d reports; want completed with its report (an older message does not take it back)", got.Status, len(got.Reports))
	}
	if types := eventTypes(e.updates("alice").Updates); !slices.Equal(types, []string{relay.EventTaskCompleted, relay.EventTaskClaimed}) {
		t.Fatalf("alice's updates = %v; want each once", types)
	}
}

// Ensure a task's outbox rows are numbered in the order they were written,
// per task; a state row followed by its task's next row leaves as one
// message standing for both; and a state row acknowledged after its task
// changed with no row left to say so is written again (else the change
// would never leave).
func TestOutboxNumbersAndStateRows(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	t1, t2 := remoteTask(e, "one"), remoteTask(e, "two")
	for i, in := range []relay.RemoteApply{fromA("m1", 1, t1, nil), fromA("m2", 1, t2, nil)} {
		if ok, err := e.db.Mesh().ApplyRemote(e.ctx, in); !ok || err != nil {
			t.Fatalf("apply %d: %v, %v", i, ok, err)
		}
	}
	// bob claims the first: its state row and its task-claimed entry for
	// alice, numbered 1 and 2, leave as one message.
	claimed := e.mustClaim("bob")
	out, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].TaskID != claimed.ID || out[0].Change.Seq != 2 || out[0].Change.From != 1 || len(out[0].Merged) != 1 ||
		out[0].Change.Event == nil || out[0].Change.Event.Type != relay.EventTaskClaimed || out[0].Change.Task.Status != relay.StatusClaimed {
		t.Fatalf("outbox = %+v; want one claimed message numbered 1 to 2", out)
	}
	// The lease is renewed while that message is in flight: a change
	// without an entry, for which no row is written (one is waiting).
	if _, err := e.db.RenewLease(e.ctx, "bob", claimed.ID, 600); err != nil {
		t.Fatal(err)
	}
	if more, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10, Busy: []int64{out[0].Seq, out[0].Merged[0]}}); err != nil || len(more) != 0 {
		t.Fatalf("outbox beside the message in flight = %+v, %v", more, err)
	}
	if err := e.db.Mesh().AckOutbox(e.ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	again, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	renewed := e.task(claimed.ID)
	if len(again) != 1 || again[0].Change.Seq != 3 || again[0].Change.Event != nil || again[0].Change.Task.UpdatedAt != renewed.UpdatedAt {
		t.Fatalf("outbox after the acknowledgement = %+v; want the renewed state as number 3", again)
	}
	if err := e.db.Mesh().AckOutbox(e.ctx, again, nil); err != nil {
		t.Fatal(err)
	}
	if d, err := e.db.Mesh().OutboxDepth(e.ctx); err != nil || d != 0 {
		t.Fatalf("outbox depth = %d, %v; want 0 (the state sent is the task's)", d, err)
	}
	// The other task's first row is its own number 1.
	e.mustClaim("bob")
	out, err = e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
	if err != nil || len(out) != 1 || out[0].Change.From != 1 || out[0].Change.Seq != 2 {
		t.Fatalf("the second task's outbox = %+v, %v", out, err)
	}
}

// Ensure a task that crossed before messages were numbered (migration
// 0023) takes the next number from the other relay as it comes, and keeps
// the order from there.
func TestMigrateMeshOrder(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	task := remoteTask(e, "Crossed before")
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("m1", 0, task, nil)); !ok || err != nil {
		t.Fatalf("apply unnumbered: %v, %v", ok, err)
	}
	e.reopenAfter(undoMeshOrder(t) + `PRAGMA user_version = 22;`)
	c, ev := cancelled(task)
	early := fromA("m3", 3, c, ev)
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, early); !ok || err != nil {
		t.Fatalf("relay A's first numbered message after the upgrade = %v, %v; want applied", ok, err)
	}
	if got := e.task(task.ID); got.Status != relay.StatusCancelled {
		t.Fatalf("task = %s", got.Status)
	}
	requeued, rev := task, &relay.MeshEvent{ID: relay.NewID(), RecipientSlug: "bob", Type: relay.EventTaskRequeued, Summary: "again", CreatedAt: task.UpdatedAt}
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("m5", 5, requeued, rev)); ok || !errors.Is(err, relay.ErrEarlierMissing) {
		t.Fatalf("a message after a gap = %v, %v; want it to wait", ok, err)
	}
}

// Ensure a sender's action applied after a later one of its task (forced:
// the earlier one was not coming) does not undo it: the sender asked for
// changes on a completed task (2) and then cancelled it (3); the cancel,
// forced first, finds the task completed and does nothing, and the
// request for changes, arriving after it, must not reopen a task its
// sender cancelled since: it changes nothing, and the sender's relay is
// sent the task's true state.
func TestStaleSenderActionChangesNothing(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	task := remoteTask(e, "Asked again, then cancelled")
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("new", 1, task, nil)); !ok || err != nil {
		t.Fatalf("the new task = %v, %v", ok, err)
	}
	e.mustClaim("bob")
	e.report("bob", task.ID, relay.ReportCompleted, "done")
	requeued, cancel := task, task
	requeued.Status, cancel.Status = relay.StatusQueued, relay.StatusCancelled
	ev := func(typ string) *relay.MeshEvent {
		return &relay.MeshEvent{ID: relay.NewID(), RecipientSlug: "bob", Type: typ, Summary: typ, CreatedAt: task.UpdatedAt}
	}
	late := fromA("cancel", 3, cancel, ev(relay.EventTaskCancelled))
	late.Force = true
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, late); !ok || err != nil {
		t.Fatalf("the cancel, forced = %v, %v", ok, err)
	}
	depth, err := e.db.Mesh().OutboxDepth(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("again", 2, requeued, ev(relay.EventTaskRequeued))); !ok || err != nil {
		t.Fatalf("the request for changes after it = %v, %v", ok, err)
	}
	if got := e.task(task.ID); got.Status != relay.StatusCompleted {
		t.Fatalf("the task after the older request for changes = %s; want it still completed", got.Status)
	}
	if after, err := e.db.Mesh().OutboxDepth(e.ctx); err != nil || after <= depth {
		t.Fatalf("outbox %d → %d, %v; want the task's state queued for its sender", depth, after, err)
	}
}

// Ensure an unnumbered message (a row written before messages were
// numbered, or a number below 1) about a task whose numbered messages were
// applied does not take its state back: it was written before any of them
// (a relay numbers every message of a task once it numbers one), so it is
// stale — its journal entry arrives, the task stays completed.
func TestUnnumberedAfterNumberedIsStale(t *testing.T) {
	e, task := sentToA(t, "Upgraded in between")
	now := relay.FormatTime(e.clock.Now())
	claimed, done := asOwner(task, relay.StatusClaimed, now), asOwner(task, relay.StatusCompleted, now)
	for _, m := range []relay.RemoteApply{fromA("n1", 1, claimed, toAlice(relay.EventTaskClaimed, now)), fromA("n2", 2, done, toAlice(relay.EventTaskCompleted, now))} {
		if ok, err := e.db.Mesh().ApplyRemote(e.ctx, m); !ok || err != nil {
			t.Fatalf("%s = %v, %v", m.MsgID, ok, err)
		}
	}
	for _, seq := range []int64{0, -7} {
		if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA(fmt.Sprint("old", seq), seq, claimed, toAlice(relay.EventTaskClaimed, now))); !ok || err != nil {
			t.Fatalf("the unnumbered message = %v, %v", ok, err)
		}
		if got := e.task(task.ID); got.Status != relay.StatusCompleted {
			t.Fatalf("the task after a message numbered %d = %s; want it still completed", seq, got.Status)
		}
	}
}

// Ensure a relay's message numbers reach only its own tasks: another relay
// numbering a message about relay A's task (a huge number, forced as if
// its earlier ones were not coming) neither touches A's task nor moves its
// count, and A's next message applies in order.
func TestMessageNumbersOfAnotherRelay(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("bob")
	task := remoteTask(e, "A's")
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("a1", 1, task, nil)); !ok || err != nil {
		t.Fatalf("A's task = %v, %v", ok, err)
	}
	gone, ev := cancelled(task)
	other := fromA("b-huge", 1<<62, gone, ev)
	other.FromRelay, other.FromName, other.FromLabel, other.Force = "bb00000000000000", "relay-b", "relay-b", true
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, other); ok && err == nil {
		if got := e.task(task.ID); got.Status != relay.StatusQueued {
			t.Fatalf("A's task after B's numbered cancel = %s; want queued", got.Status)
		}
	}
	if got := e.task(task.ID); got.Status != relay.StatusQueued {
		t.Fatalf("A's task after B's message = %s; want queued", got.Status)
	}
	gone, ev = cancelled(task)
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("a2", 2, gone, ev)); !ok || err != nil {
		t.Fatalf("A's cancel, its number 2 = %v, %v; want applied in order", ok, err)
	}
	if got := e.task(task.ID); got.Status != relay.StatusCancelled {
		t.Fatalf("A's task after A's cancel = %s; want cancelled", got.Status)
	}
}

// Ensure a relay sends no state back for a task another relay owns: here
// alice's task to relay A's bob is read from the outbox (the post), A's
// claim is applied before NATS's acknowledgement comes, and acknowledging
// the post leaves the outbox empty. The mirror changed only by what its
// owner sent; a state row for it would travel to A for nothing (one
// message in five of a lifecycle, before this was fixed).
func TestMirrorSendsNoStateBack(t *testing.T) {
	e, task := sentToA(t, "Across")
	out, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
	if err != nil || len(out) != 1 || out[0].TaskID != task.ID {
		t.Fatalf("outbox after the post = %+v, %v; want one message", out, err)
	}
	now := relay.FormatTime(e.clock.Now())
	if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("claimed", 1, asOwner(task, relay.StatusClaimed, now), toAlice(relay.EventTaskClaimed, now))); !ok || err != nil {
		t.Fatalf("A's claim = %v, %v", ok, err)
	}
	if got := e.task(task.ID); got.Status != relay.StatusClaimed {
		t.Fatalf("the mirror = %s; want claimed", got.Status)
	}
	if err := e.db.Mesh().AckOutbox(e.ctx, out, nil); err != nil {
		t.Fatal(err)
	}
	if left, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10}); err != nil || len(left) != 0 {
		t.Fatalf("outbox after the acknowledgement = %+v, %v; want nothing for A", left, err)
	}
}

// Ensure a sender's own action on its copy of the task (a cancel) while the
// post is in flight still reaches the owner, with or without the owner's
// claim applied first: its journal row stays after the post is
// acknowledged, carrying the cancelled state as the task's number 2.
func TestCancelWhilePostInFlight(t *testing.T) {
	for _, claimFirst := range []bool{false, true} {
		t.Run(fmt.Sprint("claimFirst=", claimFirst), func(t *testing.T) {
			e, task := sentToA(t, "Across")
			out, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
			if err != nil || len(out) != 1 {
				t.Fatalf("outbox = %+v, %v", out, err)
			}
			if claimFirst {
				now := relay.FormatTime(e.clock.Now())
				if ok, err := e.db.Mesh().ApplyRemote(e.ctx, fromA("claimed", 1, asOwner(task, relay.StatusClaimed, now), toAlice(relay.EventTaskClaimed, now))); !ok || err != nil {
					t.Fatalf("A's claim = %v, %v", ok, err)
				}
			}
			if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "not needed"); err != nil {
				t.Fatal(err)
			}
			if err := e.db.Mesh().AckOutbox(e.ctx, out, nil); err != nil {
				t.Fatal(err)
			}
			left, err := e.db.Mesh().PendingOutbox(e.ctx, relay.OutboxQuery{Limit: 10})
			if err != nil || len(left) != 1 || left[0].Change.Event == nil || left[0].Change.Event.Type != relay.EventTaskCancelled ||
				left[0].Change.Task.Status != relay.StatusCancelled || left[0].Change.Seq != 2 {
				t.Fatalf("outbox after the ack = %+v, %v; want the cancel, numbered 2", left, err)
			}
		})
	}
}
