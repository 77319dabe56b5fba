package store

import (
	"context"
	"database/sql"
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

	mu      sync.Mutex
	tokens  map[string]tokenEntry // token hash → principal
	workers map[string]workerEntry
}

// tokenEntry is a kept Authenticate answer.
type tokenEntry struct {
	p       relay.Principal
	gen     uint64
	expires time.Time // when it stops being trusted: authTTL on, or a run token's expiry if sooner
}

// workerEntry is a kept WorkerOnly answer.
type workerEntry struct {
	only    bool
	gen     uint64
	expires time.Time
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

// token returns the kept principal of hash, if one is still good at now.
func (c *authCache) token(hash string, now time.Time) (relay.Principal, bool) {
	gen := c.gen.Load()
	c.mu.Lock()
	e, ok := c.tokens[hash]
	c.mu.Unlock()
	if !ok || e.gen != gen || !now.Before(e.expires) {
		return relay.Principal{}, false
	}
	return e.p, true
}

// keepToken keeps p for hash, read in generation gen (loaded before the
// read began, so that a change committed meanwhile makes it stale).
func (c *authCache) keepToken(hash string, p relay.Principal, gen uint64, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens == nil || len(c.tokens) >= authMaxEntries {
		c.tokens = make(map[string]tokenEntry)
	}
	c.tokens[hash] = tokenEntry{p: p, gen: gen, expires: expires}
}

// workerOnly returns the kept WorkerOnly answer for slug, if still good.
func (c *authCache) workerOnly(slug string, now time.Time) (only, ok bool) {
	gen := c.gen.Load()
	c.mu.Lock()
	e, found := c.workers[slug]
	c.mu.Unlock()
	if !found || e.gen != gen || !now.Before(e.expires) {
		return false, false
	}
	return e.only, true
}

// keepWorkerOnly keeps only for slug, read in generation gen.
func (c *authCache) keepWorkerOnly(slug string, only bool, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.workers == nil || len(c.workers) >= authMaxEntries {
		c.workers = make(map[string]workerEntry)
	}
	c.workers[slug] = workerEntry{only: only, gen: gen, expires: now.Add(authTTL)}
}

// readAuthEpoch reads the counter inside the writer's open transaction.
func readAuthEpoch(conn *sql.Conn) (int64, error) {
	var n int64
	err := conn.QueryRowContext(context.Background(), `SELECT n FROM auth_epoch`).Scan(&n)
	return n, err
}
