package mesh

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Refusal reasons (the reason label of crosschat_mesh_refused_total).
const (
	RefusedUndecodable = "undecodable"
	RefusedOldVersion  = "old-version"
	RefusedTo          = "to"
	RefusedStale       = "stale"
	RefusedFuture      = "future"
	RefusedSignature   = "signature"
	// RefusedUnknownRelay is an envelope from a relay id this relay has
	// not recorded (no key in the directory): it is not held.
	RefusedUnknownRelay = "unknown-relay"
)

// refusalReasons are every reason a refusal can give (the store's
// relay.MeshRefusal reasons included), so each is exported from zero.
var refusalReasons = []string{RefusedUndecodable, RefusedOldVersion, RefusedTo, RefusedStale, RefusedFuture, RefusedSignature,
	RefusedUnknownRelay, "sender", "owner", "recipient", "local-task", "closed-task", "open-tasks", "held-full"}

// outcome is what becomes of a message from the stream.
type outcome int

const (
	ack   outcome = iota // applied, held, recognised or refused for good
	retry                // a store failure: deliver again
	later                // the held list is full: deliver again after heldFullDelay
	early                // an earlier message of its task has not arrived: deliver again after gapDelay
	apply                // (judge) checked: to be applied
)

// maxRelays bounds the relays recorded as trusted or blocked (admission
// records the operator decided on). Pending records do not count: they are
// forgotten when their directory entry goes, so relays a client makes up
// cannot keep a real one from being admitted. A variable for tests.
var maxRelays = 1000

// heldFullDelay is how long an envelope that found the held list full waits
// before it is delivered again (it is never acknowledged unheld).
const heldFullDelay = 30 * time.Second

// maxRefusalLog bounds the refusal lines Status shows; maxRefusalCauses
// the causes (reason and relay) logged once each.
const (
	maxRefusalLog    = 20
	maxRefusalCauses = 1000
	// maxRefusalDetail bounds a refusal's detail line (bytes).
	maxRefusalDetail = 200
)

// worst is what becomes of a message whose changes came to outs: delivered
// again if any change must be (its changes applied are recognised by their
// ids then), a store failure's retry taking precedence over a wait.
func worst(outs []outcome) outcome {
	o := ack
	for _, x := range outs {
		switch {
		case x == retry:
			return retry
		case x == early:
			o = early
		}
	}
	return o
}

// judge checks one envelope against who may send it: it returns apply with
// what to apply, each change of the envelope in its order, or holds or
// refuses it and says what becomes of the message. released is set for an
// envelope held while its relay was pending, whose timestamp was checked
// when it arrived; force applies it even though an earlier message of its
// task has not arrived.
func (n *Node) judge(data []byte, released, force bool) (outcome, []relay.RemoteApply) {
	e, items, err := decode(data)
	newer := errors.Is(err, errNewer)
	switch {
	case newer:
		// Checked below as far as this build can read it, then held.
	case errors.Is(err, errOld):
		n.refuse(RefusedOldVersion, e.From, "an envelope of version 1 carries no signed timestamp; upgrade that relay")
		return ack, nil
	case err != nil:
		n.refuse(RefusedUndecodable, e.From, err.Error())
		return ack, nil
	}
	if e.To != n.id.ID {
		n.refuse(RefusedTo, e.From, fmt.Sprintf("envelope %s is addressed to relay %s", e.ID, clip(e.To, 64)))
		return ack, nil
	}
	now, at := n.now(), time.UnixMilli(e.TS)
	if released && now.Sub(at) > dedupMemory-maxSkew {
		// Held past what the applied ids remember: it could be a replay
		// of one applied and forgotten, so it is refused.
		n.refuse(RefusedStale, e.From, fmt.Sprintf("held envelope %s is older than the %s the relay remembers applied ids", e.ID, dedupMemory-maxSkew))
		return ack, nil
	}
	if !released {
		switch {
		case now.Sub(at) > replayWindow:
			n.refuse(RefusedStale, e.From, fmt.Sprintf("envelope %s is older than the %s replay window", e.ID, replayWindow))
			return ack, nil
		case at.Sub(now) > maxSkew:
			n.refuse(RefusedFuture, e.From, fmt.Sprintf("envelope %s is dated %s ahead", e.ID, at.Sub(now).Round(time.Second)))
			return ack, nil
		}
	}
	if newer {
		// Its signature cannot be judged by this build: held only from a
		// relay recorded with a key, in its own bounded share.
		n.mu.Lock()
		cur, known := n.trust[e.From]
		n.mu.Unlock()
		if !known || cur.PublicKey == "" {
			n.refuse(RefusedUnknownRelay, e.From, fmt.Sprintf("envelope %s of version %d is from a relay never recorded", e.ID, e.V))
			return ack, nil
		}
		return n.hold(e, nil, HeldVersion, data), nil
	}
	r, dirKey, err := n.relayOf(e.From)
	if err != nil {
		n.setErr("admit relay", err)
		return retry, nil
	}
	if r.State != relay.RelayTrusted {
		return n.holdUntrusted(e, items, r, dirKey, data), nil
	}
	// A trusted relay's envelope is judged by the key the operator pinned,
	// whatever the directory shows now.
	if !checkSig(r.PublicKey, e.signed(), e.Sig) {
		n.refuse(RefusedSignature, e.From, fmt.Sprintf("envelope %s does not carry the pinned key's signature of relay %s", e.ID, r.Name))
		return ack, nil
	}
	ins := make([]relay.RemoteApply, len(items))
	from, self := n.labelOf(e.From), n.selfLabel() // once an envelope, not once a change
	for k, it := range items {
		ins[k] = relay.RemoteApply{MsgID: it.ID, FromRelay: e.From, FromName: r.Name, FromLabel: from,
			SelfID: n.id.ID, SelfName: n.id.Name, SelfLabel: self, Mark: relay.MarkVerified, Change: it.Change, Force: force}
	}
	return apply, ins
}

// settleApply counts what the store made of an envelope and says what
// becomes of its message.
func (n *Node) settleApply(in relay.RemoteApply, res relay.ApplyResult) outcome {
	var refusal *relay.MeshRefusal
	switch {
	case errors.As(res.Err, &refusal):
		n.refuse(refusal.Reason, in.FromRelay, refusal.Detail)
		return ack
	case errors.Is(res.Err, relay.ErrEarlierMissing):
		return early
	case res.Err != nil:
		n.setErr("apply", res.Err)
		return retry
	case res.Applied:
		n.applied.Add(1)
	default:
		n.duplicates.Add(1)
	}
	return ack
}

// holdUntrusted holds an envelope of relay r, which this relay does not
// trust (now): signed with a key the relay is recorded with (the pinned
// one, another it showed since, or the one its entry shows), so a client
// without one of those keys cannot fill the held list, and a genuine
// envelope of a trusted relay whose key a forger replaced in the directory
// is held, never dropped. Each is checked again against the key pinned
// when it is released.
func (n *Node) holdUntrusted(e envelope, items []item, r relay.MeshRelay, dirKey string, data []byte) outcome {
	var keys []string
	for _, k := range []string{r.PublicKey, r.NewKey, dirKey} {
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		n.refuse(RefusedUnknownRelay, e.From, fmt.Sprintf("envelope %s is from a relay with no key in the directory", e.ID))
		return ack
	}
	signed := slices.ContainsFunc(keys, func(k string) bool { return checkSig(k, e.signed(), e.Sig) })
	if !signed {
		n.refuse(RefusedSignature, e.From, fmt.Sprintf("envelope %s carries the signature of no key relay %s showed", e.ID, r.Name))
		return ack
	}
	switch {
	case r.State == relay.RelayBlocked:
		return n.hold(e, items, HeldBlocked, data)
	case r.NewKey != "":
		return n.hold(e, items, HeldKeyChange, data)
	case r.NewName != "":
		return n.hold(e, items, HeldRenamed, data)
	}
	return n.hold(e, items, HeldUntrusted, data)
}

// refuse counts a refusal and logs it once per reason and relay. A from
// that is not a relay id (an undecodable envelope's) counts as "", and the
// detail is cut to maxRefusalDetail bytes, so what a sender writes cannot
// grow what is kept.
func (n *Node) refuse(reason, from, detail string) {
	if !validRelayID(from) {
		from = ""
	}
	detail = clip(detail, maxRefusalDetail)
	n.mu.Lock()
	n.refused[reason]++
	key := reason + "/" + from
	first := !n.refusedSeen[key] && len(n.refusedSeen) < maxRefusalCauses // made-up relay ids cannot grow it without bound
	if first {
		n.refusedSeen[key] = true
	}
	line := relay.FormatTime(n.now()) + " " + reason + ": " + detail
	if from != "" {
		line += " (from relay " + from + ")"
	}
	n.refusals = append(n.refusals, line)
	if len(n.refusals) > maxRefusalLog {
		n.refusals = n.refusals[len(n.refusals)-maxRefusalLog:]
	}
	n.mu.Unlock()
	if first {
		n.log.Warn("mesh: refused an envelope", "reason", reason, "from", from, "detail", detail)
	}
}

// Refused returns the refusal counts by reason.
func (n *Node) Refused() map[string]int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]int64, len(n.refused)+len(refusalReasons))
	for _, k := range refusalReasons {
		out[k] = 0
	}
	for k, v := range n.refused {
		out[k] = v
	}
	return out
}
