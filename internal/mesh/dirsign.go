package mesh

import (
	"encoding/json"
	"sort"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// dirSigned is the byte string a directory entry's signature covers: the
// entry's JSON without its signature.
func dirSigned(v any) []byte {
	b, _ := json.Marshal(v) // entries are structs of plain fields
	return append([]byte("crosschat-dir/1\n"), b...)
}

func (a dirAgent) signedBytes() []byte {
	a.Sig = ""
	return dirSigned(a)
}

// signedBytes is what Sig covers: the fields an older build knows, as it
// marshals them (Reads and ReadsSig are left out when empty).
func (r dirRelay) signedBytes() []byte {
	r.Sig, r.Reads, r.ReadsSig = "", 0, ""
	return dirSigned(r)
}

// readsSigned is what ReadsSig covers: the entry with Reads.
func (r dirRelay) readsSigned() []byte {
	r.Sig, r.ReadsSig = "", ""
	return dirSigned(r)
}

// readsLists reports whether a relay entry signs, with the key it shows,
// that its relay reads envelopes carrying lists (batchVersion).
func readsLists(r dirRelay) bool {
	return r.Reads >= batchVersion && r.PublicKey != "" && checkSig(r.PublicKey, r.readsSigned(), r.ReadsSig)
}

// relayEntryValid reports whether a relay entry is signed by the key it
// shows (it proves the writer holds that key, not that the key is the
// relay's: the pinned key decides that).
func relayEntryValid(r dirRelay) bool {
	if r.checked {
		return r.valid
	}
	return r.PublicKey != "" && checkSig(r.PublicKey, r.signedBytes(), r.Sig)
}

// agentAccepted reports whether an agent entry is one the directory view
// takes: from a trusted relay (or this one), signed with its pinned key.
// Called with n.mu held.
func (n *Node) agentAccepted(a dirAgent) bool {
	if a.RelayID == n.id.ID {
		return checkSig(n.id.PublicKey, a.signedBytes(), a.Sig)
	}
	r, ok := n.trust[a.RelayID]
	return ok && r.State == relay.RelayTrusted && checkSig(r.PublicKey, a.signedBytes(), a.Sig)
}

// ownerValid reports whether the entry holding a slug is signed by its
// relay: the pinned key when there is one, else the key of the relay's own
// directory entry. A forged entry does not hold a slug. Called with n.mu held.
func (n *Node) ownerValid(a dirAgent) bool {
	key := ""
	if r, ok := n.trust[a.RelayID]; ok && r.PublicKey != "" {
		key = r.PublicKey
	} else if d, ok := n.relays[a.RelayID]; ok && relayEntryValid(d) {
		key = d.PublicKey
	}
	return key != "" && checkSig(key, a.signedBytes(), a.Sig)
}

// dirConflicts returns the directory entries ignored because they claim a
// slug a trusted relay holds.
func (n *Node) dirConflicts() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.dirConflict))
	for _, c := range n.dirConflict {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
