package mesh

import (
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
	f.Fuzz(func(t *testing.T, data []byte) {
		e, _, err := decode(data)
		if err != nil {
			return
		}
		switch verify(e, id.PublicKey, id.PublicKey) {
		case relay.MarkVerified, relay.MarkUnverified, relay.MarkMismatch:
		default:
			t.Fatal("verify gave an unknown mark")
		}
	})
}
