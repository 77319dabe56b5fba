package mesh

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// receive is what the consumer does with one message: checks the envelope
// against who may send it and applies what it carries (in one store
// write), holds it, or refuses it, and says what becomes of the message.
// released and force are as for judge.
func (n *Node) receive(data []byte, released, force bool) outcome {
	o, ins := n.judge(data, released, force)
	if o != apply {
		return o
	}
	res, err := n.opts.Store.ApplyRemoteBatch(n.ctx, ins)
	outs := make([]outcome, len(ins))
	for k := range ins {
		if err != nil { // nothing was committed
			outs[k] = retry
			continue
		}
		outs[k] = n.settleApply(ins[k], res[k])
	}
	if err != nil {
		n.setErr("apply", err)
	}
	return worst(outs)
}

// rawItems encodes changes as a sender seals them, with ids m1, m2, ….
func rawItems(tb testing.TB, changes ...relay.MeshChange) []rawItem {
	tb.Helper()
	out := make([]rawItem, len(changes))
	for k, c := range changes {
		b, err := json.Marshal(c)
		if err != nil {
			tb.Fatal(err)
		}
		out[k] = rawItem{ID: fmt.Sprintf("m%d", k+1), Change: b}
	}
	return out
}

// Ensure an envelope carrying a list decodes to its changes in their
// order, each with its own id, under one signature that covers all of
// them; and that a list no sender makes is refused.
func TestDecodeLists(t *testing.T) {
	id := identity(t, t.TempDir(), "a")
	const to = "0123456789abcdef"
	changes := []relay.MeshChange{{Task: relay.Task{ID: relay.NewID(), Title: "one"}}, {Task: relay.Task{ID: relay.NewID(), Title: "two"}, Seq: 2},
		{Task: relay.Task{ID: relay.NewID(), Title: "three"}}}
	data, msgID, err := sealBatch(id, to, rawItems(t, changes...))
	if err != nil {
		t.Fatal(err)
	}
	e, items, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if e.V != batchVersion || e.ID != msgID || !strings.HasPrefix(msgID, "batch-") || len(items) != 3 {
		t.Fatalf("decoded version %d id %q (sealed as %q), %d changes", e.V, e.ID, msgID, len(items))
	}
	for k, it := range items {
		if it.ID != fmt.Sprintf("m%d", k+1) || it.Change.Task.Title != changes[k].Task.Title || it.Change.Seq != changes[k].Seq {
			t.Fatalf("change %d = %s %+v", k, it.ID, it.Change)
		}
	}
	if got := verify(e, id.PublicKey, id.PublicKey); got != relay.MarkVerified {
		t.Fatalf("verify = %s", got)
	}
	// One change alone is known by its own id, as NATS and the receiver
	// know it in version 2.
	one, oneID, err := sealBatch(id, to, rawItems(t, changes[0]))
	if err != nil || oneID != "m1" {
		t.Fatalf("one change sealed as %q, %v", oneID, err)
	}
	if _, got, err := decode(one); err != nil || len(got) != 1 || got[0].ID != "m1" {
		t.Fatalf("one change decoded as %+v, %v", got, err)
	}
	// The signature covers every change of the list.
	tampered := strings.Replace(string(data), `"title":"two"`, `"title":"owt"`, 1)
	if tampered == string(data) {
		t.Fatal("the test's change was not found in the envelope")
	}
	if e, _, err := decode([]byte(tampered)); err != nil || verify(e, id.PublicKey, id.PublicKey) != relay.MarkMismatch {
		t.Fatalf("a change altered after signing: %v, verify %s", err, verify(e, id.PublicKey, id.PublicKey))
	}

	if batchID([]string{"a\nb", "c"}) == batchID([]string{"a", "b\nc"}) {
		t.Fatal("two lists of other ids share an envelope id")
	}

	envelopeOf := func(envID, body string) []byte {
		b, err := json.Marshal(envelope{V: batchVersion, ID: envID, From: id.ID, To: to, TS: time.Now().UnixMilli(), Body: json.RawMessage(body)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	many := make([]string, maxBatch+1)
	manyIDs := make([]string, maxBatch+1)
	for k := range many {
		manyIDs[k] = fmt.Sprintf("m%d", k)
		many[k] = fmt.Sprintf(`{"id":%q,"change":{}}`, manyIDs[k])
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty list", envelopeOf("x", `[]`)},
		{"not a list", envelopeOf("x", `{"task":{}}`)},
		{"a change with no id", envelopeOf(batchID([]string{"", "b"}), `[{"change":{}},{"id":"b","change":{}}]`)},
		{"an id repeated", envelopeOf(batchID([]string{"a", "a"}), `[{"id":"a","change":{}},{"id":"a","change":{}}]`)},
		{"an id over 64 bytes", envelopeOf(strings.Repeat("i", 65), `[{"id":"`+strings.Repeat("i", 65)+`","change":{}}]`)},
		{"an envelope id not made of its changes' ids", envelopeOf("batch-other", `[{"id":"a","change":{}},{"id":"b","change":{}}]`)},
		{"one change under another id", envelopeOf("b", `[{"id":"a","change":{}}]`)},
		{"more changes than a sender puts in one", envelopeOf(batchID(manyIDs), "["+strings.Join(many, ",")+"]")},
		{"a change that is not one", envelopeOf(batchID([]string{"a"}), `[{"id":"a","change":[1]}]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, items, err := decode(tc.data); err == nil {
				t.Fatalf("decoded %d changes", len(items))
			}
		})
	}
}

// Ensure a read's rows go in one envelope per relay that reads lists, in
// their order, split at maxBatch changes and maxBatchBody bytes, and one
// envelope each for a relay that does not (or whose directory entry is not
// signed with the key pinned for it).
func TestEnvelopesGroupRows(t *testing.T) {
	n := &Node{id: identity(t, t.TempDir(), "a"), relays: map[string]dirRelay{}, trust: map[string]relay.MeshRelay{}}
	for id, r := range map[string]struct {
		lists  bool
		dirKey string
	}{"lists": {true, "K"}, "single": {false, "K"}, "otherkey": {true, "L"}} {
		n.relays[id] = dirRelay{ID: id, PublicKey: r.dirKey, lists: r.lists}
		n.trust[id] = relay.MeshRelay{ID: id, PublicKey: "K", State: relay.RelayTrusted}
	}
	row := func(seq int64, to, title string) relay.OutboxItem {
		return relay.OutboxItem{Seq: seq, MsgID: fmt.Sprintf("m%d", seq), ToRelay: to, TaskID: title, Change: relay.MeshChange{Task: relay.Task{Title: title}}}
	}
	describe := func(es []*outEnvelope) string {
		var parts []string
		for _, e := range es {
			var seqs []string
			for _, it := range e.items {
				seqs = append(seqs, fmt.Sprint(it.Seq))
			}
			parts = append(parts, fmt.Sprintf("%s/%v:%s", e.to, e.list, strings.Join(seqs, ",")))
		}
		return strings.Join(parts, " ")
	}
	got := describe(n.envelopes([]relay.OutboxItem{row(1, "lists", "a"), row(2, "single", "b"), row(3, "lists", "c"), row(4, "single", "d"),
		row(5, "otherkey", "e"), row(6, "unknown", "f"), row(7, "lists", "g")}))
	if want := "lists/true:1,3,7 single/false:2 single/false:4 otherkey/false:5 unknown/false:6"; got != want {
		t.Fatalf("envelopes %s; want %s", got, want)
	}

	rows := make([]relay.OutboxItem, maxBatch+2)
	for k := range rows {
		rows[k] = row(int64(k+1), "lists", "t")
	}
	es := n.envelopes(rows)
	if len(es) != 2 || len(es[0].items) != maxBatch || len(es[1].items) != 2 {
		t.Fatalf("%d rows in %d envelopes; want %d and 2", len(rows), len(es), maxBatch)
	}
	big := strings.Repeat("x", maxBatchBody/3)
	es = n.envelopes([]relay.OutboxItem{row(1, "lists", big), row(2, "lists", big), row(3, "lists", big), row(4, "lists", "small")})
	if got := describe(es); !strings.Contains(got, ":1,2 ") || !strings.HasSuffix(got, ":3,4") {
		t.Fatalf("rows of a third of maxBatchBody each went as %s; want two a list", got)
	}
	for _, e := range es {
		if _, data, err := e.seal(n.id); err != nil || len(data) > maxEnvelope {
			t.Fatalf("sealed %d bytes, %v", len(data), err)
		}
	}
}

// postHeld posts count tasks from alice on a to bob on b while a's
// publisher is held, so that its next read finds them all, and waits for
// b to have them. It returns how many messages a published for them.
func postHeld(t *testing.T, a, b *testRelay, count int) int64 {
	t.Helper()
	ctx := t.Context()
	knows(t, a, "bob", "relay-b")
	a.node.pub.mu.Lock()
	sent := a.node.messages.Load()
	ids := make([]string, count)
	for k := range ids {
		task, err := a.svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("Burst %d", k), Instructions: "x"})
		if err != nil {
			a.node.pub.mu.Unlock()
			t.Fatal(err)
		}
		ids[k] = task.ID
	}
	a.node.pub.mu.Unlock()
	eventually(t, "B has the burst", func() (bool, string) {
		for _, id := range ids {
			if _, err := b.svc.Task(ctx, id); err != nil {
				return false, fmt.Sprintf("%s: %v", id, err)
			}
		}
		return true, ""
	})
	return a.node.messages.Load() - sent
}

// Ensure what one read of the outbox finds for a relay that reads lists
// goes in one message, and every change of it is applied.
func TestBurstTravelsInOneEnvelope(t *testing.T) {
	a, b := aliceAndBob(t)
	eventually(t, "A sees that B reads lists", func() (bool, string) {
		return a.node.takesLists(b.node.id.ID), ""
	})
	if sent := postHeld(t, a, b, 20); sent != 1 {
		t.Fatalf("20 tasks posted at once went in %d messages; want 1", sent)
	}
}

// Ensure a relay whose directory entry does not say it reads lists (a
// build before them) gets one change a message.
func TestOlderBuildGetsOneChangeAMessage(t *testing.T) {
	old := advertiseReads
	advertiseReads = 0
	t.Cleanup(func() { advertiseReads = old })
	a, b := aliceAndBob(t)
	if sent := postHeld(t, a, b, 20); sent != 20 {
		t.Fatalf("20 tasks went in %d messages; want one each", sent)
	}
	if a.node.takesLists(b.node.id.ID) {
		t.Fatal("A takes B to read lists")
	}
}

// Ensure a relay's directory entry is signed as a build before lists
// checks it (over the fields that build knows), and that what it says it
// reads counts only as signed.
func TestRelayEntrySignedForOlderBuilds(t *testing.T) {
	a := startRelay(t, "relay-a", "")
	e, err := a.node.bucket().Get(t.Context(), relayKey(a.node.id.ID))
	if err != nil {
		t.Fatal(err)
	}
	var older struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		PublicKey string `json:"publicKey"`
		Address   string `json:"address,omitempty"`
		Outbox    int    `json:"outboxDepth"`
		At        int64  `json:"at"`
		Sig       string `json:"sig,omitempty"`
	}
	if err := json.Unmarshal(e.Value(), &older); err != nil {
		t.Fatal(err)
	}
	sig := older.Sig
	older.Sig = ""
	b, _ := json.Marshal(older)
	if !checkSig(older.PublicKey, append([]byte("crosschat-dir/1\n"), b...), sig) {
		t.Fatalf("an older build finds the entry unsigned: %s", e.Value())
	}
	var r dirRelay
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		t.Fatal(err)
	}
	if !relayEntryValid(r) || !readsLists(r) {
		t.Fatalf("entry %s: valid %v, reads lists %v", e.Value(), relayEntryValid(r), readsLists(r))
	}
	for name, change := range map[string]func(*dirRelay){
		"reads changed":         func(r *dirRelay) { r.Reads = batchVersion + 1 },
		"reads signature gone":  func(r *dirRelay) { r.ReadsSig = "" },
		"the entry's signature": func(r *dirRelay) { r.ReadsSig = r.Sig },
		"at changed":            func(r *dirRelay) { r.At++ },
	} {
		x := r
		change(&x)
		if readsLists(x) {
			t.Errorf("%s: still reads lists", name)
		}
	}
}

// Ensure a list is applied change by change: one refused is counted and
// left, one before an earlier message of its task sends the message back,
// and when it comes again what was applied is recognised by its id.
func TestListAppliedChangeByChange(t *testing.T) {
	a, b := aliceAndBob(t)
	ctx := t.Context()
	first, nobody, later := queuedTask("alice", "bob", "First"), queuedTask("alice", "nobody", "Nobody's"), queuedTask("alice", "bob", "Later")
	data, _, err := sealBatch(a.node.id, b.node.id.ID, rawItems(t, relay.MeshChange{Task: first, Seq: 1},
		relay.MeshChange{Task: nobody, Seq: 1}, relay.MeshChange{Task: later, Seq: 2}))
	if err != nil {
		t.Fatal(err)
	}
	refused, applied, dups := b.node.Refused()["recipient"], b.node.applied.Load(), b.node.duplicates.Load()
	if o := b.node.receive(data, false, false); o != early {
		t.Fatalf("outcome %d; want early (the third waits for its task's first message)", o)
	}
	if _, err := b.svc.Task(ctx, first.ID); err != nil {
		t.Fatalf("the first change: %v", err)
	}
	if _, err := b.svc.Task(ctx, later.ID); err == nil {
		t.Fatal("the change waiting for an earlier one was applied")
	}
	if got := b.node.Refused()["recipient"]; got != refused+1 {
		t.Fatalf("recipient refusals %d; want %d", got, refused+1)
	}
	if o := b.node.receive(data, false, true); o != ack {
		t.Fatalf("delivered again and forced: outcome %d; want ack", o)
	}
	if _, err := b.svc.Task(ctx, later.ID); err != nil {
		t.Fatalf("the forced change: %v", err)
	}
	if b.node.applied.Load() != applied+2 || b.node.duplicates.Load() != dups+1 {
		t.Fatalf("applied %d, recognised %d; want 2 and 1", b.node.applied.Load()-applied, b.node.duplicates.Load()-dups)
	}
}

// Ensure a list from a relay not trusted is held whole, each of its changes
// shown, and every change of it applied once the relay is trusted.
func TestListHeldAndReleasedWhole(t *testing.T) {
	a, b := aliceAndBob(t)
	c := startRelay(t, "relay-c", "", a.node.InviteURL())
	eventually(t, "B sees relay C", func() (bool, string) {
		_, ok := b.node.relay(c.node.id.ID)
		return ok, ""
	})
	one, two := queuedTask("carol", "bob", "Held one"), queuedTask("carol", "bob", "Held two")
	data, _, err := sealBatch(c.node.id, b.node.id.ID, rawItems(t, relay.MeshChange{Task: one}, relay.MeshChange{Task: two}))
	if err != nil {
		t.Fatal(err)
	}
	if o := b.node.receive(data, false, false); o != ack {
		t.Fatalf("outcome %d; want held", o)
	}
	if envs, err := b.db.Mesh().HeldEnvelopes(t.Context(), "", "", 10); err != nil || len(envs) != 1 {
		t.Fatalf("held %d envelopes, %v; want the list whole", len(envs), err)
	}
	h, err := b.node.Held(t.Context())
	if err != nil || len(h) != 2 || h[0].Title != "Held one" || h[1].Title != "Held two" || h[1].MsgID != "m2" || h[1].Reason != HeldUntrusted {
		t.Fatalf("held %+v, %v; want each change of the list shown", h, err)
	}
	createAgent(t, c, "carol")
	trustEachOther(t, b, c)
	eventually(t, "both changes applied", func() (bool, string) {
		_, e1 := b.svc.Task(t.Context(), one.ID)
		_, e2 := b.svc.Task(t.Context(), two.ID)
		return e1 == nil && e2 == nil, fmt.Sprintf("%v %v", e1, e2)
	})
	if h, err := b.node.Held(t.Context()); err != nil || len(h) != 0 {
		t.Fatalf("still held %+v, %v", h, err)
	}
}

// Ensure the consumer applies changes in writes of about applyBatch
// changes and never splits a message's changes across two.
func TestWriteEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   []int
		size int
		want []int
	}{
		{"none", nil, 3, nil},
		{"one message a change", []int{0, 1, 2, 3, 4, 5, 6}, 3, []int{3, 6, 7}},
		{"a list past the size stays whole", []int{0, 0, 0, 0, 0, 1, 2}, 3, []int{5, 7}},
		{"a list across the size boundary", []int{0, 1, 1, 1, 2}, 2, []int{4, 5}},
		{"all in one", []int{0, 1, 2}, 64, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := writeEnds(tc.at, tc.size); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("writeEnds(%v, %d) = %v; want %v", tc.at, tc.size, got, tc.want)
			}
		})
	}
}

// Ensure the consumer sends back a list one of whose changes came before
// an earlier message of its task, having applied (or refused) the others,
// judges those once however often the list comes back, and applies the
// waiting change once that message arrives.
func TestListWaitsForAnEarlierMessage(t *testing.T) {
	a, b := aliceAndBob(t)
	ctx := t.Context()
	js := jetStreamClient(t, a.node.ClientURL())
	fresh, nobody, chained := queuedTask("alice", "bob", "Fresh"), queuedTask("alice", "nobody", "Nobody's"), queuedTask("alice", "bob", "Chained")
	list, _, err := sealBatch(a.node.id, b.node.id.ID, rawItems(t, relay.MeshChange{Task: fresh, Seq: 1},
		relay.MeshChange{Task: nobody, Seq: 1}, relay.MeshChange{Task: chained, Seq: 2}))
	if err != nil {
		t.Fatal(err)
	}
	refused, applied, dups := b.node.Refused()["recipient"], b.node.applied.Load(), b.node.duplicates.Load()
	if _, err := js.Publish(ctx, subject(b.node.id.ID), list); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, StreamName, consumerName(b.node.id.ID))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the list delivered again, waiting, its first change applied", func() (bool, string) {
		_, err := b.svc.Task(ctx, fresh.ID)
		info, ierr := cons.Info(ctx)
		if ierr != nil {
			return false, ierr.Error()
		}
		w := b.node.gaps.waiting(a.node.id.ID)
		return err == nil && w == 1 && info.NumRedelivered >= 1, fmt.Sprintf("fresh task %v, %d waiting, %d delivered again", err, w, info.NumRedelivered)
	})
	if _, err := b.svc.Task(ctx, chained.ID); err == nil {
		t.Fatal("the change before its task's first message was applied")
	}
	if _, err := js.Publish(ctx, subject(b.node.id.ID), sealed(t, a.node.id, "chain-1", b.node.id.ID, relay.MeshChange{Task: chained, Seq: 1})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the chained task at its second message", func() (bool, string) {
		var seq int64
		err := rawDB(t, b).QueryRow(`SELECT in_seq FROM mesh_task_peers WHERE remote_id = ?`, chained.ID).Scan(&seq)
		return err == nil && seq == 2 && b.node.gaps.waiting("") == 0, fmt.Sprintf("seq %d, %v, %d waiting", seq, err, b.node.gaps.waiting(""))
	})
	if got := b.node.Refused()["recipient"] - refused; got != 1 {
		t.Fatalf("the refused change was judged %d times; want once", got)
	}
	if a, d := b.node.applied.Load()-applied, b.node.duplicates.Load()-dups; a != 3 || d != 0 {
		t.Fatalf("applied %d, recognised %d; want 3 (fresh, both chained) and none judged again", a, d)
	}
}

// Ensure a relay that closes says it no longer reads lists, so that
// nothing is sent it in a version the build started next in its folder
// might not read.
func TestClosedRelayWithdrawsLists(t *testing.T) {
	a, b := aliceAndBob(t)
	id := b.node.id.ID
	eventually(t, "A sees that B reads lists", func() (bool, string) { return a.node.takesLists(id), "" })
	b.stop()
	eventually(t, "A sees that B no longer does", func() (bool, string) { return !a.node.takesLists(id), "" })
}
