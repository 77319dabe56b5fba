package mesh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Held envelopes: what a relay not trusted (now) sends, or an envelope of a
// newer version, kept in the store and applied in order once it may be.

// Reasons a held envelope waits.
const (
	HeldUntrusted = "untrusted"
	HeldBlocked   = "blocked"
	HeldVersion   = "version"
	// HeldKeyChange: the relay was trusted, and the directory now shows
	// another key; held until the operator confirms a key.
	HeldKeyChange = "key-change"
	// HeldRenamed: the relay was trusted under another name; held until
	// the operator trusts it again.
	HeldRenamed = "renamed"
)

// hold keeps an envelope in the store until its relay is trusted (or an
// upgrade reads its version).
// It is stored with its first change (items is empty for a version this
// build cannot read); Held shows each.
func (n *Node) hold(e envelope, items []item, reason string, data []byte) outcome {
	var c relay.MeshChange
	if len(items) > 0 {
		c = items[0].Change
	}
	h := relay.HeldEnvelope{MsgID: e.ID, FromRelay: e.From, Reason: reason, TaskID: c.Task.ID, Title: c.Task.Title,
		SenderSlug: c.Task.SenderSlug, RecipientSlug: c.Task.RecipientSlug, Data: data}
	if h.MsgID == "" {
		h.MsgID = fmt.Sprintf("held-%d", n.now().UnixNano())
	}
	if len(h.Title) > 200 {
		h.Title = h.Title[:200]
	}
	var refusal *relay.MeshRefusal
	if _, err := n.opts.Store.HoldEnvelope(n.ctx, h); errors.As(err, &refusal) {
		n.refuse(refusal.Reason, e.From, refusal.Detail)
		return heldFullOutcome(reason)
	} else if err != nil {
		n.setErr("hold envelope", err)
		return retry
	}
	n.held.Add(1)
	return ack
}

// heldFullOutcome is what becomes of an envelope held for reason that found
// the held list full. An envelope left in the stream keeps its place in the
// consumer's window (consumeWindow) until it is held, and enough of them
// stop everything after them: only a relay the operator trusted (pending
// again after a key change or a rename, its genuine word possibly in it)
// is waited for that way, until the operator decides. What a relay never trusted, or blocked, sends past
// its share is refused, or any admitted relay could stop this relay's
// inbox for as long as it liked, and only trusting it would end that.
func heldFullOutcome(reason string) outcome {
	switch reason {
	case HeldKeyChange, HeldRenamed:
		return later // left in the stream, delivered again later
	}
	return ack // untrusted, blocked, or a version this build cannot read: refused
}

// releaseHeld applies, in order, what trusted relays sent while they were
// pending, and what an older build held for its version.
func (n *Node) releaseHeld(ctx context.Context, relayID string) error {
	n.applyMu.Lock()
	defer n.applyMu.Unlock()
	return n.releaseHeldLocked(ctx, relayID)
}

// releaseHeldLocked is releaseHeld with applyMu held.
func (n *Node) releaseHeldLocked(ctx context.Context, relayID string) error {
	// First what relays sent while not trusted (pending, or pending again
	// after a key change or a rename), in the order it arrived whatever
	// the reason; then what an older build held for its version. A blocked
	// relay's envelopes stay.
	for _, version := range []bool{false, true} {
		reason := ""
		if version {
			reason = HeldVersion
		}
		// A change that arrived before an earlier one of its task (held
		// in another order than sent) waits for the rest; then the
		// changes waiting, of every envelope, are tried again in their
		// tasks' order (so a task's changes held last first go in one
		// pass, not one pass each, however lists grouped them), while
		// any goes, and at last applied anyway.
		var waiting []heldWait
		// Paged by seq: envelopes left held (a relay still pending, a
		// version still unread) never stop the ones after them.
		var last int64
		for ctx.Err() == nil {
			hs, err := n.opts.Store.HeldEnvelopesAfter(ctx, relayID, reason, last, 100)
			if err != nil {
				return err
			}
			for _, h := range hs {
				last = h.Seq
				if !version {
					n.mu.Lock()
					st := n.trust[h.FromRelay].State
					n.mu.Unlock()
					if h.Reason == HeldVersion || h.Reason == HeldBlocked || st != relay.RelayTrusted {
						continue
					}
				}
				waits, err := n.release(ctx, h, version)
				if err != nil {
					return err
				}
				if len(waits) > 0 {
					waiting = append(waiting, heldWait{h: h, early: waits})
				}
			}
			if len(hs) < 100 {
				break
			}
		}
		for force := false; len(waiting) > 0 && ctx.Err() == nil; {
			still, went, err := n.releaseWaiting(ctx, waiting, force)
			if err != nil {
				return err
			}
			force = !went // none went: the earlier ones are not coming
			waiting = still
		}
	}
	return ctx.Err()
}

// heldWait is a held envelope with its changes that wait for an earlier
// message of their task.
type heldWait struct {
	h     relay.HeldEnvelope
	early []relay.RemoteApply
}

// release judges held envelope h and applies its changes (or refuses or
// holds it again), dropping it unless any of its changes waits for an
// earlier message of its task: those it returns.
func (n *Node) release(ctx context.Context, h relay.HeldEnvelope, version bool) ([]relay.RemoteApply, error) {
	before := n.held.Load()
	o, ins := n.judge(h.Data, !version, false)
	switch {
	case o == apply:
	case o == ack && n.held.Load() != before:
		return nil, nil // held again (a version this build cannot read yet)
	case o == ack:
		return nil, n.opts.Store.DropHeld(ctx, h.Seq) // refused
	default:
		return nil, fmt.Errorf("apply held envelope %s: the store failed", h.MsgID)
	}
	outs, err := n.applyHeld(ctx, ins)
	if err != nil {
		return nil, fmt.Errorf("apply held envelope %s: %w", h.MsgID, err)
	}
	var waits []relay.RemoteApply
	for k, o := range outs {
		if o == early {
			waits = append(waits, ins[k])
		}
	}
	if len(waits) == 0 {
		return nil, n.opts.Store.DropHeld(ctx, h.Seq)
	}
	return waits, nil
}

// releaseWaiting tries the waiting changes of every envelope again, all
// in their numbers' order (forced if force), in writes of about
// applyBatch; it drops each envelope none of whose changes waits any more
// and returns the others, and whether any change went.
func (n *Node) releaseWaiting(ctx context.Context, waiting []heldWait, force bool) ([]heldWait, bool, error) {
	type ref struct{ w, k int }
	var refs []ref
	for w := range waiting {
		for k := range waiting[w].early {
			refs = append(refs, ref{w, k})
		}
	}
	seqOf := func(r ref) int64 { return waiting[r.w].early[r.k].Change.Seq }
	slices.SortStableFunc(refs, func(x, y ref) int { return cmp.Compare(seqOf(x), seqOf(y)) })
	ins := make([]relay.RemoteApply, len(refs))
	for i, r := range refs {
		ins[i] = waiting[r.w].early[r.k]
		ins[i].Force = force
	}
	outs, err := n.applyHeld(ctx, ins)
	if err != nil {
		return nil, false, fmt.Errorf("apply held envelopes: %w", err)
	}
	left := make([][]relay.RemoteApply, len(waiting))
	went := false
	for i, r := range refs {
		if outs[i] == early {
			left[r.w] = append(left[r.w], ins[i])
		} else {
			went = true
		}
	}
	var still []heldWait
	for w, hw := range waiting {
		if len(left[w]) > 0 {
			still = append(still, heldWait{h: hw.h, early: left[w]})
		} else if err := n.opts.Store.DropHeld(ctx, hw.h.Seq); err != nil {
			return nil, false, err
		}
	}
	return still, went, nil
}

// applyHeld applies changes in their order, in writes of applyBatch, and
// says what became of each (ack or early); a store failure is an error.
func (n *Node) applyHeld(ctx context.Context, ins []relay.RemoteApply) ([]outcome, error) {
	outs := make([]outcome, len(ins))
	for start := 0; start < len(ins); start += applyBatch {
		end := min(start+applyBatch, len(ins))
		res, err := n.opts.Store.ApplyRemoteBatch(ctx, ins[start:end])
		if err != nil {
			n.setErr("apply", err)
			return nil, err
		}
		for k := start; k < end; k++ {
			if outs[k] = n.settleApply(ins[k], res[k-start]); outs[k] == retry {
				return nil, fmt.Errorf("the store failed: %w", res[k-start].Err)
			}
		}
	}
	return outs, nil
}

// maxHeldShown bounds the changes Held lists.
const maxHeldShown = 200

// Held lists what the envelopes held carry, oldest first, one entry per
// change (an envelope carrying a list shows each), at most maxHeldShown.
func (n *Node) Held(ctx context.Context) ([]HeldInfo, error) {
	envs, err := n.opts.Store.HeldEnvelopes(ctx, "", "", maxHeldShown)
	if err != nil {
		return nil, err
	}
	var hs []relay.HeldEnvelope
	for _, h := range envs {
		if len(hs) >= maxHeldShown {
			break // the lists past it are not read
		}
		hs = append(hs, heldChanges(h)...)
	}
	hs = hs[:min(len(hs), maxHeldShown)]
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]HeldInfo, 0, len(hs))
	labels := n.labelsLocked()
	for _, h := range hs {
		name := n.relayNameByID(h.FromRelay)
		sender := h.SenderSlug
		if i := strings.IndexByte(sender, '@'); i > 0 {
			sender = sender[:i] // a relay names only its own agents
		}
		if sender != "" {
			label := labels[h.FromRelay]
			if label == "" {
				if label = relayName(name).Label; label == "" || n.nameIssueLocked(h.FromRelay, name, labels) != "" {
					label = h.FromRelay
				}
			}
			sender += "@" + label
		}
		out = append(out, HeldInfo{MsgID: h.MsgID, RelayID: h.FromRelay, Relay: name, Reason: h.Reason, TaskID: h.TaskID,
			Title: h.Title, Sender: sender, Recipient: h.RecipientSlug, ReceivedAt: h.ReceivedAt})
	}
	return out, nil
}

// heldChanges is a held envelope as the changes it carries: itself, or for
// a list (its id made of its changes' ids, batchID, and no larger than a
// relay makes one) one entry per change.
func heldChanges(h relay.HeldEnvelope) []relay.HeldEnvelope {
	if !strings.HasPrefix(h.MsgID, "batch-") || len(h.Data) > 2*maxBatchBody {
		return []relay.HeldEnvelope{h} // not a list a relay makes: shown as it was stored
	}
	_, items, err := decode(h.Data)
	if err != nil || len(items) < 2 {
		return []relay.HeldEnvelope{h}
	}
	out := make([]relay.HeldEnvelope, len(items))
	for k, it := range items {
		t := it.Change.Task
		out[k] = relay.HeldEnvelope{Seq: h.Seq, MsgID: it.ID, FromRelay: h.FromRelay, Reason: h.Reason, TaskID: t.ID,
			Title: clip(t.Title, 200), SenderSlug: t.SenderSlug, RecipientSlug: t.RecipientSlug, ReceivedAt: h.ReceivedAt}
	}
	return out
}

// HeldInfo is one change of a held envelope as the Mesh page shows it.
type HeldInfo struct {
	MsgID   string `json:"msgId"`
	RelayID string `json:"relayId"`
	Relay   string `json:"relay"`
	// Reason is untrusted (delivered when the relay is trusted), key-change
	// or renamed (a trusted relay shows another key or name: delivered when
	// the operator trusts it again, each envelope checked against the key
	// then pinned), blocked (never delivered) or version (read after an
	// upgrade).
	Reason     string `json:"reason"`
	TaskID     string `json:"taskId"`
	Title      string `json:"title"`
	Sender     string `json:"sender"`
	Recipient  string `json:"recipient"`
	ReceivedAt string `json:"receivedAt"`
}
