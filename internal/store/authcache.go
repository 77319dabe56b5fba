package store

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Every tool call authenticates its bearer token, and every claim asks
// whether the agent's tasks are for its worker only. Read from the
// database, each is a read transaction on the reader pool, which after any
// commit first has to catch up with the WAL: about a tenth of the relay's
// CPU per call (docs/performance.md). So the store keeps what it last read
// of them in memory, and throws it away whenever it may be wrong.
//
// What may make an answer wrong is counted in the database itself: triggers
// (migration 0010) bump auth_epoch when a token changes or goes, an agent
// goes, or a worker setting changes, whichever code path does it. The
// writer reads the counter in every transaction it commits, and when it
// moved, it starts a new generation before anyone is answered or woken:
// once a write that revoked a token has returned, no request is let in on
// that token. A token nobody knows is never kept, so a new token or agent
// needs no bump. A change made by another program behind the relay's back
// is seen by the next commit, and kept answers expire after authTTL anyway.

// authTTL is how long a kept answer is trusted without a commit to say it
// still holds.
const authTTL = 5 * time.Second

// Test hooks, nil outside tests: testHookAuthRead runs after Authenticate's
// database read and before it keeps the answer; testHookCommitted after a
// batch's commit and the cache's check, before anyone is woken or answered.
var testHookAuthRead, testHookCommitted func()

// authMaxEntries bounds each map; a full map starts again empty.
const authMaxEntries = 4096

// authCache holds recent answers of Authenticate and WorkerOnly.
type authCache struct {
	gen  atomic.Uint64 // generation of the answers that are still good
	seen int64         // auth_epoch as the writer last read it (writer goroutine only)

	tokens  keptAnswers[relay.Principal] // token hash → principal
	workers keptAnswers[bool]            // slug → WorkerOnly
}

// observe is called by the writer after a commit with the auth_epoch value
// read inside that transaction (or the error reading it). A moved counter,
// or one it could not read, starts a new generation.
func (c *authCache) observe(n int64, err error) {
	if err != nil || n != c.seen {
		c.seen = n
		c.gen.Add(1)
	}
}

// keptAnswers is a bounded map of answers, each kept with the generation
// it was read in and the time it stops being trusted.
type keptAnswers[V any] struct {
	mu sync.Mutex
	m  map[string]keptAnswer[V]
}

// keptAnswer is one kept answer.
type keptAnswer[V any] struct {
	v       V
	gen     uint64
	expires time.Time
}

// get returns the answer kept for key, if it is of generation gen (the
// current one) and still trusted at now.
func (k *keptAnswers[V]) get(key string, gen uint64, now time.Time) (V, bool) {
	k.mu.Lock()
	e, ok := k.m[key]
	k.mu.Unlock()
	if !ok || e.gen != gen || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v for key until expires, read in generation gen (loaded before
// the read began, so that a change committed meanwhile makes it stale).
func (k *keptAnswers[V]) put(key string, v V, gen uint64, expires time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= authMaxEntries {
		k.m = make(map[string]keptAnswer[V])
	}
	k.m[key] = keptAnswer[V]{v: v, gen: gen, expires: expires}
}
