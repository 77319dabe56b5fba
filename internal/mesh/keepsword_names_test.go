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

// Regression tests of the review that found a trusted relay could take
// another's names, look-alike relay names and entries no trusted key signed
// could confuse them: each failed before its fix.

// queuedTask is a new task as a relay sends it, from sender to recipient.
func queuedTask(sender, recipient, title string) relay.Task {
	now := relay.FormatTime(time.Now())
	return relay.Task{ID: relay.NewID(), SenderSlug: sender, RecipientSlug: recipient, Title: title, Instructions: "x",
		Priority: 2, Status: relay.StatusQueued, CreatedAt: now, UpdatedAt: now}
}

// send publishes change, signed by id as message msgID, to relay to's subject.
func send(t *testing.T, url string, id Identity, msgID string, to *testRelay, change relay.MeshChange) {
	t.Helper()
	data, err := sealAt(id, msgID, to.node.id.ID, change, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jetStreamClient(t, url).Publish(t.Context(), subject(to.node.id.ID), data); err != nil {
		t.Fatal(err)
	}
}

// senderOf waits until r holds task id and returns its sender.
func senderOf(t *testing.T, r *testRelay, id string) string {
	t.Helper()
	var got relay.Task
	eventually(t, "task "+id+" on "+r.name, func() (bool, string) {
		var err error
		got, err = r.svc.Task(t.Context(), id)
		return err == nil, fmt.Sprint(err)
	})
	return got.SenderSlug
}

// putAgentEntry writes an agent entry signed by id, as its relay would.
func putAgentEntry(t *testing.T, url string, id Identity, slug string) {
	t.Helper()
	e := dirAgent{Slug: slug, RelayID: id.ID, RelayName: id.Name, PublicKey: id.PublicKey, Online: true, At: time.Now().UnixMilli()}
	e.Sig = id.sign(e.signedBytes())
	raw, _ := json.Marshal(e)
	if _, err := bucketClient(t, url).Put(t.Context(), agentKey(id.ID, slug), raw); err != nil {
		t.Fatal(err)
	}
}

// putRelayEntry writes a relay entry for id named name, signed by key's
// owner (id's own key for a genuine entry).
func putRelayEntry(t *testing.T, url string, id, key Identity, name string) {
	t.Helper()
	r := dirRelay{ID: id.ID, Name: name, PublicKey: key.PublicKey, At: time.Now().UnixMilli()}
	r.Sig = key.sign(r.signedBytes())
	raw, _ := json.Marshal(r)
	if _, err := bucketClient(t, url).Put(t.Context(), relayKey(id.ID), raw); err != nil {
		t.Fatal(err)
	}
}

// Attack 1. Ensure a trusted relay cannot take over another trusted relay's
// agent: relay C deletes relay A's entry for alice and shows an alice of
// its own, signed with its trusted key. On B the plain name alice stays
// relay A's (across B's restart too): B's task to alice goes to A, C's
// alice is alice@relay-c (its task arrives from alice@relay-c, never from
// alice), the contest is shown, and A's refresh does not fail.
func TestAttackTrustedRelayTakesAgent(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	c := startRelay(t, "relay-c", "", url)
	trustEachOther(t, a, b, c)
	createAgent(t, a, "alice")
	createAgent(t, b, "bob")
	knows(t, b, "alice", "relay-a")
	knows(t, c, "bob", "relay-b")
	ctx := t.Context()
	if err := bucketClient(t, url).Delete(ctx, agentKey(a.node.id.ID, "alice")); err != nil {
		t.Fatal(err)
	}
	putAgentEntry(t, url, c.node.id, "alice")

	knows(t, b, "alice@relay-c", "relay-c")
	eventually(t, "B shows the contest for alice", func() (bool, string) {
		st, err := b.node.Status(ctx)
		for _, n := range st.Names {
			if n.Slug == "alice" && n.HolderID == a.node.id.ID && len(n.Others) == 1 && n.Others[0].Name == "alice@relay-c" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v %v", st.Names, err)
	})
	task := queuedTask("alice", "bob", "From C's alice")
	send(t, url, c.node.id, "c-alice-1", b, relay.MeshChange{Task: task})
	if got := senderOf(t, b, task.ID); got != "alice@relay-c" {
		t.Fatalf("C's alice's task arrived on B from %q; want alice@relay-c", got)
	}
	toAlice := post(t, b, "bob", "alice", "For A's alice")
	arrives(t, a, toAlice.ID)

	// Past A's refresh (the test refresh is 5 s), on B and after B restarts.
	time.Sleep(2 * a.node.opts.Refresh)
	if st, err := a.node.Status(ctx); err != nil || strings.Contains(st.LastError, "held by") {
		t.Fatalf("A's refresh: %q, %v", st.LastError, err)
	}
	b.stop()
	b = startRelay(t, "relay-b", b.dir, url)
	knows(t, b, "alice@relay-c", "relay-c")
	if rid, err := b.db.Mesh().RemoteRelayOf(ctx, "alice"); err != nil || rid != a.node.id.ID {
		t.Fatalf("alice on B after a restart = %q, %v; want relay A's", rid, err)
	}
	again := post(t, b, "bob", "alice", "Still for A's alice")
	arrives(t, a, again.ID)
}

// Attack 3. Ensure look-alike relay names are compared in one normal form:
// a relay named like a trusted one (an invisible character, a space for a
// hyphen, a trailing dot, capitals, a Cyrillic letter) is shown with the
// collision, and its senders are named with its id, never relay-a's label,
// even once the operator trusts it (by id). A trusted relay that renames
// itself goes back to pending with both names shown, and what it sends
// meanwhile is held.
func TestAttackLookAlikeRelayNames(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	url := a.node.InviteURL()
	b := startRelay(t, "relay-b", "", url)
	trustEachOther(t, a, b)
	createAgent(t, b, "bob")
	knows(t, a, "bob", "relay-b")
	ctx := t.Context()
	for i, name := range []string{"relay-a\u200b", "relay a", "relay-a.", "RELAY-A", "rel\u0430y-a", "\uff52elay-a"} {
		x := startRelay(t, name, "", url)
		trustEachOther(t, x, b)
		task := queuedTask("operator", "bob", "From "+name)
		send(t, url, x.node.id, fmt.Sprintf("look-alike-%d", i), b, relay.MeshChange{Task: task})
		if got, want := senderOf(t, b, task.ID), "operator@"+x.node.id.ID; got != want {
			t.Fatalf("relay %q's operator is %q on B; want %q", name, got, want)
		}
		if r, _ := relayInfoOf(b, x.node.id.ID); r.NameIssue == "" {
			t.Fatalf("B shows relay %q with no name issue: %+v", name, r)
		}
		x.stop()
	}

	// A trusted relay renames itself: pending again, both names shown, its
	// task held until the operator trusts it again.
	c := startRelayWith(t, "relay-c", "", store.Options{}, func(o *Options) { o.Refresh = time.Hour }, url)
	trustEachOther(t, c, b)
	putRelayEntry(t, url, c.node.id, c.node.id, "relay-a\u200b")
	eventually(t, "B puts C back to pending with both names", func() (bool, string) {
		r, _ := relayInfoOf(b, c.node.id.ID)
		return r.State == relay.RelayPending && r.PreviousName == "relay-c" && r.Name == "relay-a\u200b", fmt.Sprintf("%+v", r)
	})
	task := queuedTask("operator", "bob", "After the rename")
	send(t, url, c.node.id, "renamed-1", b, relay.MeshChange{Task: task})
	eventually(t, "B holds the renamed relay's task", func() (bool, string) {
		h, err := b.node.Held(ctx)
		return err == nil && len(h) == 1 && h[0].TaskID == task.ID, fmt.Sprintf("%+v %v", h, err)
	})
	if _, err := b.node.SetTrust(ctx, c.node.id.ID, relay.RelayTrusted, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := senderOf(t, b, task.ID), "operator@"+c.node.id.ID; got != want {
		t.Fatalf("the renamed relay's operator is %q on B; want %q", got, want)
	}
}

// Attack 6. Ensure a directory entry no trusted key signed never makes a
// trusted relay's name ambiguous: a keyless client makes up a relay named
// relay-a. A's operator stays operator@relay-a on B, and `mesh trust
// relay-a` still finds relay A.
func TestAttackMadeUpRelayNamedLikeTrusted(t *testing.T) {
	a, b := trustedBee(t)
	url := a.node.InviteURL()
	ctx := t.Context()
	first := post(t, a, "operator", "bee", "Before")
	if got := senderOf(t, b, first.ID); got != "operator@relay-a" {
		t.Fatalf("A's operator on B = %q", got)
	}
	fake := identity(t, t.TempDir(), "relay-a")
	putRelayEntry(t, url, fake, fake, "relay-a")
	eventually(t, "B records the made-up relay", func() (bool, string) {
		_, ok := relayInfoOf(b, fake.ID)
		return ok, "not yet"
	})
	second := post(t, a, "operator", "bee", "After")
	if got := senderOf(t, b, second.ID); got != "operator@relay-a" {
		t.Fatalf("A's operator on B after the made-up relay = %q; want operator@relay-a", got)
	}
	info, err := b.node.SetTrust(ctx, "relay-a", relay.RelayTrusted, "")
	if err != nil || info.ID != a.node.id.ID {
		t.Fatalf("mesh trust relay-a = %+v, %v; want relay A", info, err)
	}
	if r, _ := relayInfoOf(b, a.node.id.ID); r.NameIssue != "" {
		t.Fatalf("relay A's name has an issue on B: %q", r.NameIssue)
	}
}
