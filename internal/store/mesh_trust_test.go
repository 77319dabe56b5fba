package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// Ensure a relay's admission moves as the issue says: pending when first
// seen, its first key pinned, back to pending (the new key kept aside) when
// a trusted relay shows another key, blocked stays blocked, trusting pins
// the newest key, and account mode trusts at once.
func TestMeshRelayAdmission(t *testing.T) {
	e := newEnv(t, store.Options{})
	ctx := e.ctx
	see := func(id, key string, auto bool) (relay.MeshRelay, bool) {
		t.Helper()
		r, changed, err := e.db.Mesh().SeeRelay(ctx, id, "relay-"+id[:2], key, auto)
		if err != nil {
			t.Fatal(err)
		}
		return r, changed
	}
	const a, b = "aa00000000000000", "bb00000000000000"
	if r, _ := see(a, "", false); r.State != relay.RelayPending || r.PublicKey != "" {
		t.Fatalf("first sight without a key: %+v", r)
	}
	if _, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, ""); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("trusting a relay with no key = %v", err)
	}
	if r, _ := see(a, "K1", false); r.PublicKey != "K1" || r.State != relay.RelayPending {
		t.Fatalf("first key: %+v", r)
	}
	if _, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, "K9"); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("trusting a key the relay never showed = %v", err)
	}
	if r, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, "K1"); err != nil || r.State != relay.RelayTrusted {
		t.Fatalf("trust = %+v, %v", r, err)
	}
	if r, changed := see(a, "K2", false); !changed || r.State != relay.RelayPending || r.PublicKey != "K1" || r.NewKey != "K2" {
		t.Fatalf("changed key: %+v changed %v", r, changed)
	}
	if _, changed := see(a, "K2", false); changed {
		t.Fatal("the same new key reported as a change twice")
	}
	if r, _ := see(a, "K1", false); r.State != relay.RelayPending || r.NewKey != "" {
		t.Fatalf("the pinned key shown again: %+v; want pending, no other key", r)
	}
	if r, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, "K1"); err != nil || r.PublicKey != "K1" {
		t.Fatalf("trust with the pinned key back = %+v, %v; want K1", r, err)
	}
	see(a, "K2", false)
	if r, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, "K1"); err != nil || r.PublicKey != "K1" || r.NewKey != "K2" {
		t.Fatalf("trust of the first key while another shows = %+v, %v; want K1 pinned, K2 still listed", r, err)
	}
	if r, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayTrusted, "K2"); err != nil || r.PublicKey != "K2" || r.NewKey != "" {
		t.Fatalf("trust again = %+v, %v; want K2 pinned", r, err)
	}
	if _, err := e.db.Mesh().SetRelayState(ctx, a, relay.RelayBlocked, ""); err != nil {
		t.Fatal(err)
	}
	if r, _ := see(a, "K3", true); r.State != relay.RelayBlocked {
		t.Fatalf("a blocked relay's new key unblocked it: %+v", r)
	}
	if r, _ := see(b, "KB", true); r.State != relay.RelayTrusted {
		t.Fatalf("account mode: %+v", r)
	}
	rs, err := e.db.Mesh().MeshRelays(ctx)
	if err != nil || len(rs) != 2 {
		t.Fatalf("relays = %+v, %v", rs, err)
	}
	if _, err := e.db.Mesh().SetRelayState(ctx, "cc00000000000000", relay.RelayTrusted, "K1"); err == nil {
		t.Fatal("trusted a relay never seen")
	}
}

// Ensure held envelopes keep their order, are listed by relay and reason,
// are held once per message id, and are bounded per relay.
func TestMeshHeldEnvelopes(t *testing.T) {
	e := newEnv(t, store.Options{})
	ctx := e.ctx
	hold := func(id, from, reason string) (bool, error) {
		return e.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: id, FromRelay: from, Reason: reason, Data: []byte("{}")})
	}
	for i, h := range []struct{ id, from, reason string }{{"m1", "a", "untrusted"}, {"m2", "b", "version"}, {"m3", "a", "untrusted"}} {
		if ok, err := hold(h.id, h.from, h.reason); err != nil || !ok {
			t.Fatalf("hold %d = %v, %v", i, ok, err)
		}
	}
	if ok, err := hold("m1", "a", "untrusted"); err != nil || ok {
		t.Fatalf("holding m1 again = %v, %v", ok, err)
	}
	hs, err := e.db.Mesh().HeldEnvelopes(ctx, "a", "untrusted", 10)
	if err != nil || len(hs) != 2 || hs[0].MsgID != "m1" || hs[1].MsgID != "m3" {
		t.Fatalf("held from a = %+v, %v", hs, err)
	}
	if err := e.db.Mesh().DropHeld(ctx, hs[0].Seq); err != nil {
		t.Fatal(err)
	}
	if all, err := e.db.Mesh().HeldEnvelopes(ctx, "", "", 10); err != nil || len(all) != 2 {
		t.Fatalf("held = %+v, %v", all, err)
	}
	for i := range 1000 {
		if _, err := hold(fmt.Sprintf("flood-%d", i), "flood", "untrusted"); err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
	}
	var refusal *relay.MeshRefusal
	if _, err := hold("one-more", "flood", "untrusted"); !asRefusal(err, &refusal) || refusal.Reason != "held-full" {
		t.Fatalf("hold past the bound = %v; want held-full", err)
	}
	if ok, err := hold("flood-1", "flood", "untrusted"); err != nil || ok {
		t.Fatalf("holding a held message again when full = %v, %v; want recognised", ok, err)
	}
	// Newer-version envelopes (unverifiable) have their own share: they
	// neither crowd out nor are crowded out by signed ones.
	if ok, err := hold("newer-1", "flood", "version"); err != nil || !ok {
		t.Fatalf("version hold beside a full untrusted share = %v, %v", ok, err)
	}
	big := make([]byte, 40<<20)
	if ok, err := e.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: "big-1", FromRelay: "big", Reason: "untrusted", Data: big}); err != nil || !ok {
		t.Fatalf("hold 40 MiB = %v, %v", ok, err)
	}
	if _, err := e.db.Mesh().HoldEnvelope(ctx, relay.HeldEnvelope{MsgID: "big-2", FromRelay: "big", Reason: "untrusted", Data: big}); !asRefusal(err, &refusal) || refusal.Reason != "held-full" {
		t.Fatalf("hold past the byte bound = %v; want held-full", err)
	}
}

func asRefusal(err error, out **relay.MeshRefusal) bool { return errors.As(err, out) }

// Ensure the mesh settings read as zero until saved, then as saved, and a
// second save replaces the first.
func TestMeshSettingsSaved(t *testing.T) {
	e := newEnv(t, store.Options{})
	if got, err := e.db.Mesh().MeshSettings(e.ctx); err != nil || got.Embed != "" || got.URLs != nil {
		t.Fatalf("before any save: %+v, %v", got, err)
	}
	for _, want := range []relay.MeshSettings{
		{URLs: []string{"nats://a:4222"}, Name: "first"},
		{Embed: "127.0.0.1:4222", Name: "second"},
	} {
		if err := e.db.Mesh().SetMeshSettings(e.ctx, want); err != nil {
			t.Fatal(err)
		}
		if got, err := e.db.Mesh().MeshSettings(e.ctx); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("read back %+v, %v; want %+v", got, err, want)
		}
	}
}
