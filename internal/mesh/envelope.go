package mesh

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// maxEnvelope bounds a message from another relay (a task with its timeline).
const maxEnvelope = 4 << 20

// Envelope versions this build writes and reads. Version 2 carries one
// change and signs a timestamp; version 1 (no timestamp, so no replay
// window) is refused, and a version newer than batchVersion is held until
// an upgrade can read it. Version 3 carries a list of changes, each with its
// own message id, under one signature: what one read of the outbox found
// for one relay. A relay gets version 3 only once its signed directory
// entry says it reads it (dirRelay.Reads); an older build gets version 2.
const (
	envVersion   = 2
	batchVersion = 3
)

// maxBatch bounds the changes one envelope carries, and maxBatchBody the
// bytes of their list a sender puts in one (one change larger than that
// goes alone, up to maxEnvelope).
const (
	maxBatch     = 256
	maxBatchBody = 512 << 10
)

// Replay limits: an envelope is applied only while its signed timestamp is
// within replayWindow of the receiver's clock (maxSkew ahead at most).
// Applied ids are remembered for dedupMemory, longer than the window, so an
// envelope is either recognised by its id or refused by its age. The window
// is longer than the stream keeps a message, so a relay that was away as
// long as the stream remembers still applies what waited for it.
const (
	replayWindow = streamMaxAge + 24*time.Hour
	dedupMemory  = 2 * streamMaxAge
	maxSkew      = 10 * time.Minute
)

// envelope is what travels on the stream: a body, who sent it to whom and
// when, and the sender's signature over all of it.
type envelope struct {
	V    int             `json:"v"`
	ID   string          `json:"id"`
	From string          `json:"from"`
	To   string          `json:"to"`
	TS   int64           `json:"ts"` // Unix milliseconds
	Body json.RawMessage `json:"body"`
	Sig  string          `json:"sig"`
}

// signed is the byte string a signature covers.
func (e envelope) signed() []byte {
	b := make([]byte, 0, len(e.Body)+128)
	b = append(b, "crosschat-mesh/"...)
	b = strconv.AppendInt(b, int64(e.V), 10)
	b = append(b, '\n')
	b = append(b, e.ID...)
	b = append(b, '\n')
	b = append(b, e.From...)
	b = append(b, '\n')
	b = append(b, e.To...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, e.TS, 10)
	b = append(b, '\n')
	return append(b, e.Body...)
}

// item is one change an envelope carries and its message id: what the
// receiving relay records as applied, so a change is applied once however
// the envelopes carrying it were grouped.
type item struct {
	ID     string           `json:"id"`
	Change relay.MeshChange `json:"change"`
}

// rawItem is an item with its change encoded, as a sender seals it.
type rawItem struct {
	ID     string          `json:"id"`
	Change json.RawMessage `json:"change"`
}

// seal signs a change for relay to, stamped now.
func seal(id Identity, msgID, to string, c relay.MeshChange) ([]byte, error) {
	return sealAt(id, msgID, to, c, time.Now())
}

// sealBatch signs a list of changes for relay to as one envelope of
// version 3, stamped now. Its id is made of the changes' ids (batchID).
func sealBatch(id Identity, to string, items []rawItem) ([]byte, string, error) {
	return sealBatchAt(id, to, items, time.Now())
}

func sealBatchAt(id Identity, to string, items []rawItem, at time.Time) ([]byte, string, error) {
	body, err := json.Marshal(items)
	if err != nil {
		return nil, "", fmt.Errorf("encode changes: %w", err)
	}
	ids := make([]string, len(items))
	for k, it := range items {
		ids[k] = it.ID
	}
	msgID := batchID(ids)
	data, err := sealBody(id, batchVersion, msgID, to, body, at)
	return data, msgID, err
}

// sealBody signs an encoded body as an envelope of version v for relay to,
// stamped at: the one signing both versions share.
func sealBody(id Identity, v int, msgID, to string, body json.RawMessage, at time.Time) ([]byte, error) {
	e := envelope{V: v, ID: msgID, From: id.ID, To: to, TS: at.UnixMilli(), Body: body}
	e.Sig = base64.StdEncoding.EncodeToString(ed25519.Sign(id.priv, e.signed()))
	return json.Marshal(e)
}

// batchID is the id of an envelope carrying items: the one change's id, or
// a digest of all of them, so NATS (which drops a message whose id it
// stored within its duplicate window) never drops a list grouped otherwise
// than one it stored.
func batchID(ids []string) string {
	if len(ids) == 1 {
		return ids[0]
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, id := range ids {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(id)))) // each id's length first: no two lists share a digest
		h.Write([]byte(id))
	}
	return "batch-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

func sealAt(id Identity, msgID, to string, c relay.MeshChange, at time.Time) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode change: %w", err)
	}
	return sealBody(id, envVersion, msgID, to, body, at)
}

// errNewer is a well-formed envelope of a version newer than this build
// reads: it is held, not dropped.
var errNewer = errors.New("envelope of a newer version")

// errOld is an envelope of version 1, which signs no timestamp.
var errOld = errors.New("envelope of version 1 (no signed timestamp)")

// decode parses an envelope without judging its signature: the changes it
// carries, in their order, each with its message id (one, the envelope's
// own id, for version 2). An envelope of a newer version returns the
// envelope and errNewer.
func decode(data []byte) (envelope, []item, error) {
	var e envelope
	if len(data) > maxEnvelope {
		return e, nil, fmt.Errorf("envelope of %d bytes is over the %d byte limit", len(data), maxEnvelope)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, nil, fmt.Errorf("decode envelope: %w", err)
	}
	if e.ID == "" || len(e.ID) > 64 || !validRelayID(e.From) {
		return e, nil, fmt.Errorf("decode envelope: version %d, id %q, from %q", e.V, clip(e.ID, 64), clip(e.From, 64))
	}
	switch {
	case e.V > batchVersion:
		return e, nil, errNewer
	case e.V < envVersion:
		return e, nil, errOld
	case e.V == envVersion:
		var c relay.MeshChange
		if err := json.Unmarshal(e.Body, &c); err != nil {
			return e, nil, fmt.Errorf("decode envelope body: %w", err)
		}
		return e, []item{{ID: e.ID, Change: c}}, nil
	}
	var items []item
	if err := json.Unmarshal(e.Body, &items); err != nil {
		return e, nil, fmt.Errorf("decode envelope body: %w", err)
	}
	if len(items) == 0 || len(items) > maxBatch {
		return e, nil, fmt.Errorf("decode envelope %s: %d changes (1 to %d)", clip(e.ID, 64), len(items), maxBatch)
	}
	seen := make(map[string]bool, len(items))
	ids := make([]string, len(items))
	for k, it := range items {
		if it.ID == "" || len(it.ID) > 64 || seen[it.ID] {
			return e, nil, fmt.Errorf("decode envelope %s: change id %q empty, over 64 bytes or repeated", clip(e.ID, 64), clip(it.ID, 64))
		}
		seen[it.ID], ids[k] = true, it.ID
	}
	if e.ID != batchID(ids) {
		return e, nil, fmt.Errorf("decode envelope %s: its id is not made of its changes' ids", clip(e.ID, 64))
	}
	return e, items, nil
}

// verify marks an envelope against the sender's pinned key: verified,
// unverified (no key known) or mismatch (bad signature, or the directory
// now lists another key than the one pinned).
func verify(e envelope, dirKey, pinned string) string {
	if pinned == "" {
		return relay.MarkUnverified
	}
	if dirKey != "" && dirKey != pinned {
		return relay.MarkMismatch
	}
	if !checkSig(pinned, e.signed(), e.Sig) {
		return relay.MarkMismatch
	}
	return relay.MarkVerified
}

// clip cuts s to at most n bytes (on a rune boundary), marking the cut: what
// an envelope's sender chose is never kept or logged at any length.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// checkSig reports whether sig (base64) is key's (base64) signature of msg.
func checkSig(key string, msg []byte, sig string) bool {
	pub, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return false
	}
	s, err := base64.StdEncoding.DecodeString(sig)
	return err == nil && ed25519.Verify(ed25519.PublicKey(pub), msg, s)
}

// Fingerprint is the short form of a relay key an operator compares:
// SHA256: and the unpadded base64 of the key's SHA-256 ("" for no key).
func Fingerprint(key string) string {
	pub, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(pub) == 0 {
		return ""
	}
	sum := sha256.Sum256(pub)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}
