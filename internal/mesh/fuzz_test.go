package mesh

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// FuzzDecode feeds arbitrary bytes to the envelope decoder, the first thing
// that touches a message from another relay: it must refuse or decode, never
// panic, and a decoded envelope must get one of the three marks.
func FuzzDecode(f *testing.F) {
	id := identity(f, f.TempDir(), "fuzz")
	f.Add(sealed(f, id, "m1", "0123456789abcdef", relay.MeshChange{Task: relay.Task{ID: relay.NewID(), Title: "t"}}))
	f.Add([]byte(`{"v":1,"id":"x","from":"0123456789abcdef","to":"","body":{"task":{}},"sig":"AAAA"}`))
	f.Add([]byte(`{"v":1,"id":"x","from":"0123456789abcdef","body":"not an object"}`))
	f.Add([]byte(`null`))
	list, _, err := sealBatch(id, "0123456789abcdef", []rawItem{{ID: "a", Change: json.RawMessage(`{"task":{"title":"t"}}`)},
		{ID: "b", Change: json.RawMessage(`{"seq":2}`)}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(list)
	f.Add([]byte(`{"v":3,"id":"a","from":"0123456789abcdef","body":[{"id":"a","change":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, items, err := decode(data)
		if err != nil {
			return
		}
		// What decodes is one change or a list of them, each with an id of
		// its own, under the envelope's id made of theirs.
		ids := make([]string, len(items))
		seen := map[string]bool{}
		for k, it := range items {
			if it.ID == "" || len(it.ID) > 64 || seen[it.ID] {
				t.Fatalf("change id %q", it.ID)
			}
			seen[it.ID], ids[k] = true, it.ID
		}
		switch {
		case len(items) == 0 || len(items) > maxBatch:
			t.Fatalf("%d changes", len(items))
		case e.V == envVersion && (len(items) != 1 || items[0].ID != e.ID):
			t.Fatalf("version 2 decoded as %d changes", len(items))
		case e.V == batchVersion && e.ID != batchID(ids):
			t.Fatalf("list %q of %v", e.ID, ids)
		}
		switch verify(e, id.PublicKey, id.PublicKey) {
		case relay.MarkVerified, relay.MarkUnverified, relay.MarkMismatch:
		default:
			t.Fatal("verify gave an unknown mark")
		}
	})
}

// FuzzAdmit feeds arbitrary bytes to the admission request parser, what an
// invite's holder sends the embedding relay: it must refuse or accept,
// never panic, and accept only a request signed by the key it presents,
// for that invite.
func FuzzAdmit(f *testing.F) {
	id := identity(f, f.TempDir(), "fuzz")
	good := func(invite string) []byte {
		sig, _ := id.signNonce(admitSigned(invite, id.ID, id.NKey()))
		b, _ := json.Marshal(admitRequest{Secret: "s", RelayID: id.ID, Name: "n", NKey: id.NKey(), Sig: base64.StdEncoding.EncodeToString(sig)})
		return b
	}
	f.Add(good("0123456789abcdef"))
	f.Add(good("fedcba9876543210"))
	f.Add([]byte(`{"relayId":"0123456789abcdef","nkey":"UAAAA","sig":"AAAA"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		req, pub, err := parseAdmit("0123456789abcdef", data)
		if err != nil {
			return
		}
		raw, _ := base64.StdEncoding.DecodeString(pub)
		sig, _ := base64.StdEncoding.DecodeString(req.Sig)
		if !validRelayID(req.RelayID) || !ed25519.Verify(raw, admitSigned("0123456789abcdef", req.RelayID, req.NKey), sig) {
			t.Fatalf("accepted %+v", req)
		}
	})
}

// FuzzInviteToken feeds arbitrary strings to the invite parser, what a URL
// given to --nats carries: a token it accepts writes back as itself.
func FuzzInviteToken(f *testing.F) {
	f.Add("ccm1_0123456789abcdef_" + strings.Repeat("ab", 32))
	f.Add("ccm1__")
	f.Add("3f9c")
	f.Fuzz(func(t *testing.T, s string) {
		if tok, ok := parseInviteToken(s); ok && tok.String() != s {
			t.Fatalf("%q read as %q", s, tok.String())
		}
	})
}
