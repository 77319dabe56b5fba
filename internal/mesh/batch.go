package mesh

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// What one read of the outbox found goes in as few messages as it can: the
// rows for one relay that reads lists (batchVersion) in envelopes of up to
// maxBatch changes and maxBatchBody bytes, in the rows' order, each with one
// signature, one NATS store and one delivery; every row for a relay that
// does not, in an envelope of its own (version 2). A task's rows keep their
// order: they are in one envelope, or in envelopes published in order.

// outItem is one outbox row and its change, encoded.
type outItem struct {
	relay.OutboxItem
	change json.RawMessage // nil when it could not be encoded
}

// outEnvelope is what one publish carries: rows for relay to, as a list
// (version 3) or one row alone (version 2).
type outEnvelope struct {
	to    string
	list  bool
	items []outItem
	size  int
}

// envelopes groups a read's rows into the envelopes that carry them, in
// their order.
func (n *Node) envelopes(rows []relay.OutboxItem) []*outEnvelope {
	var out []*outEnvelope
	open := map[string]*outEnvelope{} // relay → its list being filled
	lists := map[string]bool{}
	alone := map[string]bool{} // tasks whose rows go one a message from here on
	for _, r := range rows {
		takes, ok := lists[r.ToRelay]
		if !ok {
			takes = n.takesLists(r.ToRelay)
			lists[r.ToRelay] = takes
		}
		change, err := json.Marshal(r.Change)
		if err != nil {
			// Sealed alone, where the error is reported; the task's later
			// rows go after it, not in a list published before it.
			change, alone[r.TaskID] = nil, true
		}
		it := outItem{OutboxItem: r, change: change}
		if !takes || alone[r.TaskID] {
			out = append(out, &outEnvelope{to: r.ToRelay, items: []outItem{it}})
			continue
		}
		e := open[r.ToRelay]
		if e == nil || len(e.items) >= maxBatch || e.size+len(change) > maxBatchBody {
			e = &outEnvelope{to: r.ToRelay, list: true}
			open[r.ToRelay] = e
			out = append(out, e)
		}
		e.items = append(e.items, it)
		e.size += len(change) + len(r.MsgID) + 20
	}
	return out
}

// seal signs the envelope: its message id (NATS's, which drops what it
// stored under that id before) and its bytes.
func (e *outEnvelope) seal(id Identity) (string, []byte, error) {
	if !e.list {
		it := e.items[0]
		if it.change == nil { // encoding failed: seal says why
			data, err := seal(id, it.MsgID, e.to, it.Change)
			return it.MsgID, data, err
		}
		data, err := sealBody(id, envVersion, it.MsgID, e.to, it.change, time.Now())
		return it.MsgID, data, err
	}
	raw := make([]rawItem, len(e.items))
	for k, it := range e.items {
		raw[k] = rawItem{ID: it.MsgID, Change: it.change}
	}
	data, msgID, err := sealBatch(id, e.to, raw)
	if err != nil {
		return "", nil, fmt.Errorf("seal %d changes: %w", len(raw), err)
	}
	return msgID, data, nil
}

// rows are the outbox rows the envelope carries.
func (e *outEnvelope) rows() []relay.OutboxItem {
	out := make([]relay.OutboxItem, len(e.items))
	for k, it := range e.items {
		out[k] = it.OutboxItem
	}
	return out
}

// takesLists reports whether relay to reads envelopes carrying lists: its
// directory entry, signed with the key pinned for it, says so.
func (n *Node) takesLists(to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	d, ok := n.relays[to]
	t, known := n.trust[to]
	return ok && d.lists && known && t.PublicKey != "" && d.PublicKey == t.PublicKey
}
