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

// Ensure a keyless client that writes a directory entry of a relay it made
// up (signed with its own key) over a slug keeps neither an existing local
// agent from registering again nor a new slug from being claimed.
func TestReviewSquatBlocksNoRegistration(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	createAgent(t, a, "alice")
	ctx := t.Context()
	kv := bucketClient(t, a.node.InviteURL())
	mallory := identity(t, t.TempDir(), "mallory")
	r := dirRelay{ID: mallory.ID, Name: "mallory", PublicKey: mallory.PublicKey, At: time.Now().UnixMilli()}
	r.Sig = mallory.sign(r.signedBytes())
	raw, _ := json.Marshal(r)
	if _, err := kv.Put(ctx, relayKey(mallory.ID), raw); err != nil {
		t.Fatal(err)
	}
	for _, slug := range []string{"alice", "alice2"} {
		e := dirAgent{Slug: slug, RelayID: mallory.ID, RelayName: "mallory", PublicKey: mallory.PublicKey, Online: true, At: time.Now().UnixMilli()}
		e.Sig = mallory.sign(e.signedBytes())
		raw, _ = json.Marshal(e)
		if _, err := kv.Put(ctx, agentKey(mallory.ID, slug), raw); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "A sees mallory", func() (bool, string) {
		_, ok := relayInfoOf(a, mallory.ID)
		return ok, "not yet"
	})
	for _, slug := range []string{"alice", "alice2"} {
		if _, err := a.svc.RegisterAgent(ctx, relay.RegisterInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-output"}}); err != nil {
			t.Fatalf("register %s beside mallory's entry: %v", slug, err)
		}
		ent, err := kv.Get(ctx, agentKey(a.node.id.ID, slug))
		if err != nil {
			t.Fatal(err)
		}
		var got dirAgent
		if err := json.Unmarshal(ent.Value(), &got); err != nil || got.RelayID != a.node.id.ID {
			t.Fatalf("directory entry of %s = %+v, %v; want relay A's", slug, got, err)
		}
	}
}

// Ensure a trusted relay that writes its entry over another trusted relay's
// agent does not take the slug: the other relays keep the first holder and
// show a conflict.
func TestReviewTrustedRelayCannotTakeSlug(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	c := startRelay(t, "relay-c", "", a.node.InviteURL())
	trustEachOther(t, a, b, c)
	createAgent(t, a, "alice")
	knows(t, c, "alice", "relay-a")
	ctx := t.Context()
	e := dirAgent{Slug: "alice", RelayID: b.node.id.ID, RelayName: "relay-b", PublicKey: b.node.id.PublicKey, Online: true, At: time.Now().UnixMilli()}
	e.Sig = b.node.id.sign(e.signedBytes())
	raw, _ := json.Marshal(e)
	if _, err := bucketClient(t, a.node.InviteURL()).Put(ctx, agentKey(e.RelayID, "alice"), raw); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*testRelay{a, c} {
		eventually(t, r.name+" shows the conflict", func() (bool, string) {
			st, err := r.node.Status(ctx)
			return err == nil && len(st.DirectoryConflicts) == 1 && strings.Contains(st.DirectoryConflicts[0], "relay-b"), fmt.Sprint(st.DirectoryConflicts, err)
		})
	}
	if rid, err := c.db.Mesh().RemoteRelayOf(ctx, "alice"); err != nil || rid != a.node.id.ID {
		t.Fatalf("alice on C = %q, %v; want relay A's", rid, err)
	}
	knows(t, c, "alice", "relay-a")
}

// Ensure the directory bucket refuses an entry over its bound.
func TestReviewDirectoryEntryBounded(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	kv := bucketClient(t, a.node.InviteURL())
	if _, err := kv.Put(t.Context(), agentKey("0123456789abcdef", "huge"), make([]byte, maxDirEntry+1)); err == nil {
		t.Fatal("an entry over the bound was stored")
	}
	if _, err := kv.Put(t.Context(), agentKey("0123456789abcdef", "small"), []byte("{}")); err != nil {
		t.Fatalf("a small entry: %v", err)
	}
}

// Ensure a trusted relay that renames itself after another relay (or after
// the receiving one) does not get its senders named like that relay's: they
// are qualified with its id.
func TestReviewRenameCannotImpersonate(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	b := startRelay(t, "relay-b", "", a.node.InviteURL())
	// C refreshes its entries only hourly here, so its rename stays.
	c := startRelayWith(t, "relay-c", "", store.Options{}, func(o *Options) { o.Refresh = time.Hour }, a.node.InviteURL())
	trustEachOther(t, a, b, c)
	createAgent(t, b, "bob")
	ctx := t.Context()
	kv := bucketClient(t, a.node.InviteURL())
	for i, name := range []string{"relay-a", "RELAY-B"} {
		entry := dirRelay{ID: c.node.id.ID, Name: name, PublicKey: c.node.id.PublicKey, At: time.Now().UnixMilli()}
		entry.Sig = c.node.id.sign(entry.signedBytes())
		raw, _ := json.Marshal(entry)
		if _, err := kv.Put(ctx, relayKey(c.node.id.ID), raw); err != nil {
			t.Fatal(err)
		}
		eventually(t, "B sees C renamed "+name, func() (bool, string) {
			r, _ := relayInfoOf(b, c.node.id.ID)
			return r.Name == name, fmt.Sprintf("%+v", r)
		})
		now := time.Now()
		task := relay.Task{ID: relay.NewID(), SenderSlug: fmt.Sprintf("carol%d", i), RecipientSlug: "bob", Title: "Hi", Instructions: "x",
			Priority: 2, Status: relay.StatusQueued, CreatedAt: relay.FormatTime(now), UpdatedAt: relay.FormatTime(now)}
		data, err := sealAt(c.node.id, fmt.Sprintf("renamed-%d", i), b.node.id.ID, relay.MeshChange{Task: task}, now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jetStreamClient(t, a.node.InviteURL()).Publish(ctx, subject(b.node.id.ID), data); err != nil {
			t.Fatal(err)
		}
		// A rename puts C back to pending: its task waits for the operator
		// to trust it again under the new name.
		eventually(t, "B holds the renamed relay's task, then trusts it again", func() (bool, string) {
			h, err := b.node.Held(ctx)
			if err != nil || len(h) == 0 || h[len(h)-1].TaskID != task.ID {
				return false, fmt.Sprintf("%+v %v", h, err)
			}
			_, err = b.node.SetTrust(ctx, c.node.id.ID, relay.RelayTrusted, "")
			return err == nil, fmt.Sprint(err)
		})
		want := task.SenderSlug + "@" + c.node.id.ID
		eventually(t, "the task arrives, its sender qualified with C's id", func() (bool, string) {
			got, err := b.svc.Task(ctx, task.ID)
			return err == nil && got.SenderSlug == want, fmt.Sprintf("%+v %v", got.SenderSlug, err)
		})
	}
}

// Ensure an old signed directory entry written again (a replay: the relay
// signed it long before the bucket got it) is ignored, while a fresh one
// of the same relay counts.
func TestReviewReplayedDirectoryEntryIgnored(t *testing.T) {
	a, b := aliceAndBob(t)
	ctx := t.Context()
	kv := bucketClient(t, a.node.InviteURL())
	for _, tc := range []struct {
		slug string
		at   time.Time
	}{
		{"ghost", time.Now().Add(-time.Hour)}, // signed an hour ago, captured and replayed now
		{"fresh", time.Now()},
	} {
		e := dirAgent{Slug: tc.slug, RelayID: a.node.id.ID, RelayName: "relay-a", PublicKey: a.node.id.PublicKey, Online: true, At: tc.at.UnixMilli()}
		e.Sig = a.node.id.sign(e.signedBytes())
		raw, _ := json.Marshal(e)
		if _, err := kv.Put(ctx, agentKey(e.RelayID, tc.slug), raw); err != nil {
			t.Fatal(err)
		}
	}
	knows(t, b, "fresh", "relay-a")
	for _, ag := range b.node.Agents() {
		if ag.Slug == "ghost" {
			t.Fatalf("the replayed entry counts: %+v", ag)
		}
	}
	if rid, err := b.db.Mesh().RemoteRelayOf(ctx, "ghost"); err != nil || rid != "" {
		t.Fatalf("ghost on B = %q, %v; want none", rid, err)
	}
}
