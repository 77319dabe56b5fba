package mesh

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A relay reads the directory with batches of direct gets (the last entry
// of each key), then every dirPoll the entries written since, and makes no
// consumer of its stream.
// A relay allowed to make consumers there could make one that delivers to
// any subject of the account with the server's own rights, past its
// permissions: to another relay's consumer's reset or pull subject, say,
// which skipped or stole every message to that relay. So no relay may.

// dirPoll is how often the directory is read again; a variable for tests.
var dirPoll = time.Second

// dirBatch is the most entries one read returns: the server's own bound on
// a batch of last entries. A read of more is made relay by relay.
const dirBatch = 1024

// errTooMany is a read that matched more keys than one batch returns.
var errTooMany = errors.New("more directory entries than one read returns")

// dirEntry is one directory entry as a direct get returns it, in the shape
// of the bucket's own entries (jetstream.KeyValueEntry).
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

// readDirectory returns the last entry of every directory key matching
// filter (a key pattern: "relay.*", "agent.<id>.>") written at revision
// from or later, deletions included, in the order they were written.
func (n *Node) readDirectory(ctx context.Context, filter string, from uint64) ([]dirEntry, error) {
	nc := n.nc
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", filter, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// max_bytes given: left out, the server reads its own options without
	// their lock, racing a reload of its users (go test -race saw it).
	req, err := json.Marshal(map[string]any{"multi_last": []string{dirSubjectPrefix + filter}, "batch": dirBatch, "seq": from,
		"max_bytes": maxDirBytes + maxDirEntry})
	if err != nil {
		return nil, err
	}
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+dirStream, inbox, req); err != nil {
		return nil, fmt.Errorf("read directory %s: %w", filter, err)
	}
	var out []dirEntry
	for {
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		m, err := sub.NextMsgWithContext(rctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("read directory %s: %w", filter, err)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
		case "204", "404": // the batch's end; no entries
			if p := m.Header.Get("Nats-Num-Pending"); p != "" && p != "0" {
				return nil, fmt.Errorf("read directory %s: %w (%s left)", filter, errTooMany, p)
			}
			slices.SortFunc(out, func(a, b dirEntry) int { return cmp.Compare(a.rev, b.rev) })
			return out, nil
		case "413":
			return nil, fmt.Errorf("read directory %s: %w", filter, errTooMany)
		default:
			return nil, fmt.Errorf("read directory %s: status %s %s", filter, status, m.Header.Get("Description"))
		}
		if len(out) >= dirBatch {
			return nil, fmt.Errorf("read directory %s: %w", filter, errTooMany)
		}
		if e, ok := entryOf(m); ok {
			out = append(out, e)
		}
	}
}

// entryOf is the directory entry a direct get answered with (false for a
// message that names none).
func entryOf(m *nats.Msg) (dirEntry, bool) {
	key, ok := strings.CutPrefix(m.Header.Get(jetstream.SubjectHeader), dirSubjectPrefix)
	if !ok || key == "" {
		return dirEntry{}, false
	}
	e := dirEntry{key: key, value: m.Data, op: jetstream.KeyValuePut}
	switch m.Header.Get("KV-Operation") {
	case "DEL", "PURGE":
		e.op = jetstream.KeyValueDelete
	}
	e.rev, _ = strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	e.created, _ = time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	return e, true
}

// readWholeDirectory returns every directory entry written at revision
// from or later: in one read, or relay by relay when there are more than
// one read returns (a relay with more than that written is read up to the
// bound and said so).
func (n *Node) readWholeDirectory(ctx context.Context, from uint64) ([]dirEntry, error) {
	all, err := n.readDirectory(ctx, ">", from)
	if !errors.Is(err, errTooMany) {
		return all, err
	}
	relays, err := n.readDirectory(ctx, "relay.*", 0)
	if err != nil {
		return nil, err
	}
	all = nil
	var errs []error
	for _, r := range relays {
		id := strings.TrimPrefix(r.key, "relay.")
		for _, filter := range []string{r.key, "agent." + id + ".>"} {
			es, err := n.readDirectory(ctx, filter, from)
			if err != nil {
				errs = append(errs, err)
			}
			all = append(all, es...)
		}
	}
	slices.SortFunc(all, func(a, b dirEntry) int { return cmp.Compare(a.rev, b.rev) })
	return all, errors.Join(errs...)
}

// pollDirectory applies the directory entries written at revision from or
// later and returns the revision to read from next, and whether any was.
func (n *Node) pollDirectory(ctx context.Context, from uint64) (uint64, bool, error) {
	entries, err := n.readWholeDirectory(ctx, from)
	for _, e := range entries {
		n.note(e)
		from = max(from, e.rev+1)
	}
	return from, len(entries) > 0, err
}
