package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A relay reads the directory one entry at a time through the stream's
// message API (the next entry of a key pattern from a revision on), then
// every dirPoll the entries written since, and makes no consumer of its
// stream. A consumer and a direct get both answer with the stream's own
// rights to whatever subject the asker names: a consumer a relay made, or
// a direct get of its own entry answered to a JetStream API subject, made
// the server reset or remove another relay's consumer, make a consumer
// that read another relay's inbox, or delete the stream. The message API
// answers as the API does, which runs nothing.

// dirPoll is how often the directory is read again; a variable for tests.
var dirPoll = time.Second

// maxDirRead bounds the entries one read returns: the bucket's bytes allow
// about this many of the smallest.
const maxDirRead = 200_000

// errTooMany is a read that found more entries than maxDirRead.
var errTooMany = errors.New("more directory entries than one read takes")

// dirEntry is one directory entry as the message API returns it, in the
// shape of the bucket's own entries (jetstream.KeyValueEntry).
type dirEntry struct {
	key     string
	value   []byte
	op      jetstream.KeyValueOp
	created time.Time
	rev     uint64
}

func (e dirEntry) Bucket() string                  { return BucketName }
func (e dirEntry) Key() string                     { return e.key }
func (e dirEntry) Value() []byte                   { return e.value }
func (e dirEntry) Revision() uint64                { return e.rev }
func (e dirEntry) Created() time.Time              { return e.created }
func (e dirEntry) Delta() uint64                   { return 0 }
func (e dirEntry) Operation() jetstream.KeyValueOp { return e.op }

// readDirectory returns the entries of the directory keys matching filter
// (a key pattern: "relay.*", "agent.<id>.>", ">") written at revision from
// or later, deletions included, in the order they were written.
func (n *Node) readDirectory(ctx context.Context, filter string, from uint64) ([]dirEntry, error) {
	var out []dirEntry
	for seq := max(from, 1); ; {
		e, ok, err := n.nextEntry(ctx, filter, seq)
		if err != nil || !ok {
			return out, err
		}
		if len(out) >= maxDirRead {
			return out, fmt.Errorf("read directory %s: %w", filter, errTooMany)
		}
		out, seq = append(out, e), e.rev+1
	}
}

// msgGetAnswer is the stream's answer to a message get.
type msgGetAnswer struct {
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs"`
		Data    []byte    `json:"data"`
		Time    time.Time `json:"time"`
	} `json:"message"`
}

// nextEntry returns the first directory entry matching filter at revision
// seq or later (false: none).
func (n *Node) nextEntry(ctx context.Context, filter string, seq uint64) (dirEntry, bool, error) {
	req, err := json.Marshal(map[string]any{"next_by_subj": dirSubjectPrefix + filter, "seq": seq})
	if err != nil {
		return dirEntry{}, false, err
	}
	rctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	m, err := n.nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+dirStream, req)
	if err != nil {
		return dirEntry{}, false, fmt.Errorf("read directory %s: %w", filter, err)
	}
	var ans msgGetAnswer
	if err := json.Unmarshal(m.Data, &ans); err != nil {
		return dirEntry{}, false, fmt.Errorf("read directory %s: %w", filter, err)
	}
	switch {
	case ans.Error != nil && ans.Error.Code == 404:
		return dirEntry{}, false, nil // no entry (left)
	case ans.Error != nil:
		return dirEntry{}, false, fmt.Errorf("read directory %s: %s", filter, ans.Error.Description)
	case ans.Message == nil:
		return dirEntry{}, false, fmt.Errorf("read directory %s: an answer without a message", filter)
	}
	key, _ := strings.CutPrefix(ans.Message.Subject, dirSubjectPrefix)
	e := dirEntry{key: key, value: ans.Message.Data, op: jetstream.KeyValuePut, created: ans.Message.Time, rev: ans.Message.Seq}
	if h := string(ans.Message.Header); strings.Contains(h, "KV-Operation: DEL") || strings.Contains(h, "KV-Operation: PURGE") {
		e.op = jetstream.KeyValueDelete
	}
	return e, true, nil
}

// pollDirectory applies the directory entries written at revision from or
// later and returns the revision to read from next, and whether any was.
func (n *Node) pollDirectory(ctx context.Context, from uint64) (uint64, bool, error) {
	entries, err := n.readDirectory(ctx, ">", from)
	for _, e := range entries {
		n.note(e)
		from = max(from, e.rev+1)
	}
	return from, len(entries) > 0, err
}
