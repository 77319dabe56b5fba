package mesh

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Regression tests of the review that found ids keyed globally, a fake key
// making real messages vanish and a block that did not stop delivered
// tasks: each failed before its fix.

// Attack 4, task ids. Ensure a task id is its origin relay's: relay C sends
// a new task carrying the id of the task relay D sent while pending; once
// B trusts D, D's genuine task is delivered (under an id of B's own) and
// its completion reaches D.
func TestAttackTaskIDReused(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	c := startRelay(t, "relay-c", "", url)
	d := startRelay(t, "relay-d", "", url)
	trustEachOther(t, b, c)
	createAgent(t, b, "bob")
	ctx := t.Context()
	eventually(t, "D trusts B", func() (bool, string) {
		_, err := d.node.SetTrust(ctx, b.node.id.ID, relay.RelayTrusted, "")
		return err == nil, fmt.Sprint(err)
	})
	knows(t, d, "bob", "relay-b")
	genuine := post(t, d, "operator", "bob", "D's task")
	eventually(t, "B holds D's task", func() (bool, string) {
		h, err := b.node.Held(ctx)
		return err == nil && len(h) == 1 && h[0].TaskID == genuine.ID, fmt.Sprintf("%+v %v", h, err)
	})
	squat := queuedTask("carol", "bob", "C's task with D's id")
	squat.ID = genuine.ID
	send(t, url, c.node.id, "squat-1", b, relay.MeshChange{Task: squat})
	eventually(t, "C's task is on B", func() (bool, string) {
		got, err := b.svc.Task(ctx, genuine.ID)
		return err == nil && got.Title == squat.Title, fmt.Sprintf("%+v %v", got.Title, err)
	})
	if _, err := b.node.SetTrust(ctx, d.node.id.ID, relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	var mine *relay.TaskSummary
	eventually(t, "bob has D's task too", func() (bool, string) {
		ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 10})
		for _, task := range ts {
			if task.Title == "D's task" {
				mine = &task
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d tasks, %v, refused %v", len(ts), err, b.node.Refused())
	})
	if mine.SenderSlug != "operator@relay-d" {
		t.Fatalf("D's task on B is from %q", mine.SenderSlug)
	}
	for range 2 {
		task := claims(t, b, "bob")
		if _, err := b.svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "done"}); err != nil {
			t.Fatal(err)
		}
	}
	reaches(t, d, genuine.ID, relay.StatusCompleted)
	if got, err := c.svc.Task(ctx, genuine.ID); err == nil {
		t.Fatalf("C holds D's task: %+v", got)
	}
}

// Attack 4, message ids. Ensure a message id is its origin relay's: relay C
// reuses the id of relay A's held envelope on a junk task, and (blocked,
// before A's envelope arrives) on an envelope of its own that B holds;
// once B trusts A, A's genuine task is delivered.
func TestAttackMessageIDReused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocked bool
	}{{"applied junk", false}, {"held first", true}} {
		t.Run(tc.name, func(t *testing.T) {
			a := startRelay(t, "relay-a", "")
			url := a.node.InviteURL()
			b := startRelay(t, "relay-b", "", url)
			c := startRelay(t, "relay-c", "", url)
			trustEachOther(t, b, c)
			createAgent(t, b, "bob")
			ctx := t.Context()
			eventually(t, "B records A with its key", func() (bool, string) {
				r, ok := relayInfoOf(b, a.node.id.ID)
				return ok && r.Fingerprint != "", fmt.Sprintf("%+v", r)
			})
			if tc.blocked {
				if _, err := b.node.SetTrust(ctx, c.node.id.ID, relay.RelayBlocked, ""); err != nil {
					t.Fatal(err)
				}
			}
			const msgID = "0123456789abcdef0123456789abcdef"
			junk := queuedTask("carol", "bob", "")
			if tc.blocked {
				junk.Title = "Held under A's message id"
			}
			send(t, url, c.node.id, msgID, b, relay.MeshChange{Task: junk})
			eventually(t, "B has dealt with C's envelope", func() (bool, string) {
				h, err := b.node.Held(ctx)
				if tc.blocked {
					return err == nil && len(h) == 1, fmt.Sprintf("%+v %v", h, err)
				}
				return b.node.applied.Load()+b.node.Refused()["invalid"] > 0, fmt.Sprint(b.node.applied.Load(), b.node.Refused())
			})
			genuine := queuedTask("alice", "bob", "A's genuine task")
			send(t, url, a.node.id, msgID, b, relay.MeshChange{Task: genuine})
			eventually(t, "B holds A's task", func() (bool, string) {
				h, err := b.db.Mesh().HeldEnvelopes(ctx, a.node.id.ID, "", 10)
				return err == nil && len(h) == 1, fmt.Sprintf("%+v %v", h, err)
			})
			if _, err := b.node.SetTrust(ctx, a.node.id.ID, relay.RelayTrusted, ""); err != nil {
				t.Fatal(err)
			}
			if got, err := b.svc.Task(ctx, genuine.ID); err != nil || got.Title != genuine.Title {
				t.Fatalf("A's task on B after trust = %+v, %v; refused %v", got.Title, err, b.node.Refused())
			}
		})
	}
}

// Attack 5. Ensure the pinned key verifies and a mismatch is held, never
// dropped: while the directory shows another key for trusted relay A, A's
// genuine task is held (not refused), as is one signed with the shown key;
// once the operator confirms A's pinned key, A's task is delivered and the
// other is refused.
func TestAttackFakeKeyMakesRealMessagesVanish(t *testing.T) {
	a := startRelayWith(t, "relay-a", "", store.Options{}, func(o *Options) { o.Refresh = time.Hour })
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	trustEachOther(t, a, b)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	fake := identity(t, t.TempDir(), "relay-a")
	putRelayEntry(t, url, a.node.id, fake, "relay-a")
	eventually(t, "B warns that A's key changed", func() (bool, string) {
		r, _ := relayInfoOf(b, a.node.id.ID)
		return r.State == relay.RelayPending && r.NewFingerprint == Fingerprint(fake.PublicKey), fmt.Sprintf("%+v", r)
	})
	// What `mesh status --json` and the Mesh page show: the pinned key and
	// the one the directory shows, both by fingerprint.
	st, err := b.node.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := KeyChange{RelayID: a.node.id.ID, Relay: "relay-a", Pinned: Fingerprint(a.node.id.PublicKey), Shown: Fingerprint(fake.PublicKey)}
	if len(st.KeyChanges) != 1 || st.KeyChanges[0] != want {
		t.Fatalf("status keyChanges = %+v; want [%+v]", st.KeyChanges, want)
	}
	if js, err := json.Marshal(st); err != nil || !strings.Contains(string(js), `"keyChanges":[{"relayId":"`+a.node.id.ID+`"`) {
		t.Fatalf("status JSON lacks the key change: %s %v", js, err)
	}
	genuine := post(t, a, "alice", "bob", "Signed with A's pinned key")
	forged := queuedTask("alice", "bob", "Signed with the shown key")
	send(t, url, Identity{ID: a.node.id.ID, priv: fake.priv}, "forged-1", b, relay.MeshChange{Task: forged})
	eventually(t, "B holds both, for the key change", func() (bool, string) {
		h, err := b.node.Held(ctx)
		n := 0
		for _, x := range h {
			if x.Reason == HeldKeyChange {
				n++
			}
		}
		return err == nil && n == 2, fmt.Sprintf("%+v %v refused %v", h, err, b.node.Refused())
	})
	before := b.node.Refused()[RefusedSignature]
	if _, err := b.node.SetTrust(ctx, "relay-a", relay.RelayTrusted, Fingerprint(a.node.id.PublicKey)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.svc.Task(ctx, genuine.ID); err != nil || got.Title != genuine.Title {
		t.Fatalf("A's genuine task on B = %+v, %v", got.Title, err)
	}
	if got, err := b.svc.Task(ctx, forged.ID); err == nil {
		t.Fatalf("the forged task was delivered: %+v", got)
	}
	if r := b.node.Refused()[RefusedSignature]; r != before+1 {
		t.Fatalf("signature refusals = %d; want %d", r, before+1)
	}
	if h, err := b.node.Held(ctx); err != nil || len(h) != 0 {
		t.Fatalf("still held: %+v, %v", h, err)
	}
}

// Attack 7. Ensure blocking a relay stops its tasks that have not started:
// tasks already delivered and queued never reach a worker, and one being
// worked on is left to finish.
func TestAttackBlockLeavesDeliveredTasks(t *testing.T) {
	a, b := trustedBee(t)
	ctx := t.Context()
	started := post(t, a, "operator", "bee", "Started")
	arrives(t, b, started.ID)
	if got := claims(t, b, "bee"); got.ID != started.ID {
		t.Fatalf("claimed %s; want %s", got.ID, started.ID)
	}
	var queued []string
	for i := range 2 {
		p := post(t, a, "operator", "bee", fmt.Sprintf("Queued %d", i))
		arrives(t, b, p.ID)
		queued = append(queued, p.ID)
	}
	if _, err := b.node.SetTrust(ctx, "relay-a", relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	if task, err := b.svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bee", Via: relay.ViaWorker}); err != nil || task != nil {
		t.Fatalf("bee's worker would run %+v, %v after relay A was blocked", task, err)
	}
	for _, id := range queued {
		got, err := b.svc.Task(ctx, id)
		if err != nil || got.Status != relay.StatusCancelled || !strings.Contains(lastReport(got), "blocked") {
			t.Fatalf("queued task %s after the block: %s %q, %v", id, got.Status, lastReport(got), err)
		}
	}
	if got, err := b.svc.Task(ctx, started.ID); err != nil || got.Status != relay.StatusClaimed {
		t.Fatalf("the started task after the block: %s, %v", got.Status, err)
	}
}

// lastReport is the message of a task's last report ("" without one).
func lastReport(t relay.Task) string {
	if len(t.Reports) == 0 {
		return ""
	}
	return t.Reports[len(t.Reports)-1].Message
}
