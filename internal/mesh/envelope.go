package mesh

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// maxEnvelope bounds a message from another relay (a task with its timeline).
const maxEnvelope = 4 << 20

// envelope is what travels on the stream: a body, who sent it to whom, and
// the sender's signature over all of it.
type envelope struct {
	V    int             `json:"v"`
	ID   string          `json:"id"`
	From string          `json:"from"`
	To   string          `json:"to"`
	Body json.RawMessage `json:"body"`
	Sig  string          `json:"sig"`
}

// signed is the byte string a signature covers.
func (e envelope) signed() []byte {
	b := make([]byte, 0, len(e.Body)+96)
	b = append(b, "crosschat-mesh/1\n"...)
	b = append(b, e.ID...)
	b = append(b, '\n')
	b = append(b, e.From...)
	b = append(b, '\n')
	b = append(b, e.To...)
	b = append(b, '\n')
	return append(b, e.Body...)
}

// seal signs a change for relay to.
func seal(id Identity, msgID, to string, c relay.MeshChange) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode change: %w", err)
	}
	e := envelope{V: 1, ID: msgID, From: id.ID, To: to, Body: body}
	e.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(id.priv, e.signed()))
	return json.Marshal(e)
}

// decode parses an envelope without judging its signature.
func decode(data []byte) (envelope, relay.MeshChange, error) {
	var (
		e envelope
		c relay.MeshChange
	)
	if len(data) > maxEnvelope {
		return e, c, fmt.Errorf("envelope of %d bytes is over the %d byte limit", len(data), maxEnvelope)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, c, fmt.Errorf("decode envelope: %w", err)
	}
	if e.V != 1 || e.ID == "" || len(e.ID) > 64 || !validRelayID(e.From) {
		return e, c, fmt.Errorf("decode envelope: version %d, id %q, from %q", e.V, e.ID, e.From)
	}
	if err := json.Unmarshal(e.Body, &c); err != nil {
		return e, c, fmt.Errorf("decode envelope body: %w", err)
	}
	return e, c, nil
}

// verify marks an envelope against the sender's pinned key: verified,
// unverified (no key known) or mismatch (bad signature, or the directory
// now lists another key than the one first seen).
func verify(e envelope, dirKey, pinned string) string {
	if pinned == "" {
		return relay.MarkUnverified
	}
	if dirKey != "" && dirKey != pinned {
		return relay.MarkMismatch
	}
	pub, err := base64.StdEncoding.DecodeString(pinned)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return relay.MarkMismatch
	}
	sig, err := base64.StdEncoding.DecodeString(e.Sig)
	if err != nil || !ed25519.Verify(ed25519.PublicKey(pub), e.signed(), sig) {
		return relay.MarkMismatch
	}
	return relay.MarkVerified
}
