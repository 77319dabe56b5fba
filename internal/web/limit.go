package web

import (
	"crypto/sha256"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimit bounds the unauthenticated attempts (sign-in, enroll, and any
// request with a wrong bearer token) one client may make: a bucket of
// Burst attempts per client, refilled by one every Every. A client is its
// address, every loopback address (127.0.0.0/8, ::1) counting as one: any
// process on this computer can pick any of them. A successful sign-in or
// enrollment gives its attempt back, so only failures (wrong tokens, bad
// invites) use the budget up. A wrong bearer token spends an attempt the
// first time the client sends it; sent again while the client remembers it
// (see failedTokenMemory), it is refused the same way without spending
// more, so one stale client config costs its client one attempt, not the
// whole budget. Once the budget is spent, a request that carries a bearer
// token is answered 429 before the token is looked at, so a right guess
// is not told apart from a wrong one, unless the token could not be a
// guess (see mayTry): one of the relay's own 256-bit shapes (an agent or
// run token, the relay's generated admin token, an invite code), which no
// guess finds, so looking at it tells a guesser nothing; or one that
// authenticated from this client before (the admin token of the
// operator's own choosing, which could be short enough to guess). So wrong
// tokens from one process do not lock the valid ones out.
type RateLimit struct {
	// Burst is how many attempts an address may make at once; a negative
	// value turns the limit off (tests and fuzzing).
	Burst int
	// Every is how long it takes to earn one more attempt.
	Every time.Duration
}

// DefaultRateLimit allows 10 failed attempts at once, then one every 3 s.
var DefaultRateLimit = RateLimit{Burst: 10, Every: 3 * time.Second}

// maxLimitedAddrs bounds the limiter's table; when it is full, buckets that
// have refilled are forgotten first (with the tokens they remember), and if
// none has, the attempt is refused.
const maxLimitedAddrs = 10000

// An address remembers the bearer tokens that failed from it, so that a
// client retrying the same stale token does not spend the budget again. It
// keeps only a fingerprint of each (the first 16 bytes of its SHA-256),
// for failedTokenMemory after the token was last sent, and at most
// maxFailedTokens of them (the one seen least recently goes first); tokens
// longer than maxTokenLen are not remembered. With maxLimitedAddrs
// addresses the limiter holds at most 160,000 fingerprints (3.8 MB; about
// 5 MB for the whole table at its fullest).
// Ten stale clients fit in the default budget; up to 16 are all
// remembered once the budget refills (more keep spending it, like a
// guesser).
const (
	maxFailedTokens   = 16
	failedTokenMemory = 10 * time.Minute
)

// A client also remembers the tokens that authenticated from it (but for
// those of an unguessable shape, which need no memory), at most
// maxGoodTokens, for goodTokenMemory after each last worked: while its
// budget is spent, they are still looked at (see mayTry).
const (
	maxGoodTokens   = 4
	goodTokenMemory = 24 * time.Hour
)

// fingerprint identifies a token without keeping it.
type fingerprint [16]byte

// failedToken is a token that failed (or, in bucket.good, worked) from a
// client, and when it was last sent (Unix nanoseconds).
type failedToken struct {
	fp   fingerprint
	seen int64
}

// fingerprintOf is tok's fingerprint: the first 16 bytes of its SHA-256.
func fingerprintOf(tok string) fingerprint {
	sum := sha256.Sum256([]byte(tok))
	return fingerprint(sum[:len(fingerprint{})])
}

// limiter is a token bucket per client address.
type limiter struct {
	cfg RateLimit
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	// n is len(buckets), read without the lock.
	n atomic.Int64
}

// bucket is one client's budget: tokens as of last, the bearer tokens
// that failed from it lately, and those that worked.
type bucket struct {
	tokens float64
	last   time.Time
	failed []failedToken
	good   []failedToken
}

func newLimiter(cfg RateLimit, now func() time.Time) *limiter {
	return &limiter{cfg: cfg, now: now, buckets: map[string]*bucket{}}
}

// loopbackClient is every loopback address's key in the limiter.
const loopbackClient = "loopback"

// clientAddr is the client's key in the limiter: the peer's IPv4
// address, or the /64 of its IPv6 address (without its zone), or
// loopbackClient for any loopback address (127.0.0.0/8, ::1, IPv4-mapped),
// which any process on this computer may pick (`curl --interface
// 127.0.0.2`): they are one client. A /64 is what one host or network is
// given, and its interfaces take any address in it, so it is one client
// too (else one guesser would have 2^64 budgets, and could fill the
// table). Proxy headers are not trusted: behind a proxy every client
// shares the proxy's budget, which errs on the safe side.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsLoopback():
		return loopbackClient
	case ip.Is6():
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// take spends one attempt of addr. When none is left it returns false and
// how long until the next one.
func (l *limiter) take(addr string) (ok bool, retryAfter time.Duration) {
	if l.cfg.Burst < 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takeLocked(l.bucketLocked(addr, now))
}

// bucketLocked returns addr's bucket refilled up to now, made if need be;
// nil when the table is full.
func (l *limiter) bucketLocked(addr string, now time.Time) *bucket {
	b := l.buckets[addr]
	if b == nil {
		if len(l.buckets) >= maxLimitedAddrs {
			l.pruneLocked(now)
		}
		if len(l.buckets) >= maxLimitedAddrs {
			return nil
		}
		b = &bucket{tokens: float64(l.cfg.Burst), last: now}
		l.buckets[addr] = b
		l.n.Store(int64(len(l.buckets)))
	}
	l.refillLocked(b, now)
	return b
}

// takeLocked spends one attempt of b (nil: a full table, refused).
func (l *limiter) takeLocked(b *bucket) (ok bool, retryAfter time.Duration) {
	if b == nil {
		return false, l.cfg.Every
	}
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(l.cfg.Every))
	}
	b.tokens--
	return true, 0
}

// refund gives back an attempt that succeeded.
func (l *limiter) refund(addr string) {
	if l.cfg.Burst < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[addr]; b != nil {
		b.tokens = math.Min(b.tokens+1, float64(l.cfg.Burst))
	}
}

func (l *limiter) refillLocked(b *bucket, now time.Time) {
	if elapsed := now.Sub(b.last); elapsed > 0 && l.cfg.Every > 0 {
		b.tokens = math.Min(b.tokens+float64(elapsed)/float64(l.cfg.Every), float64(l.cfg.Burst))
	}
	b.last = now
}

// pruneLocked forgets the addresses whose bucket is full again, with the
// failed tokens they remember: a full table must not refuse newcomers for
// the sake of that memory, which saves a stale client one attempt at most.
func (l *limiter) pruneLocked(now time.Time) {
	for addr, b := range l.buckets {
		l.refillLocked(b, now)
		if b.tokens >= float64(l.cfg.Burst) {
			delete(l.buckets, addr)
		}
	}
	l.n.Store(int64(len(l.buckets)))
}

// allow spends an attempt for r's address, or answers 429 with Retry-After
// itself and returns false. The caller refunds the attempt when it succeeds.
func (l *limiter) allow(w http.ResponseWriter, r *http.Request) bool {
	ok, wait := l.take(clientAddr(r))
	if ok {
		return true
	}
	writeLimited(w, wait)
	return false
}

// spent reports whether addr has no attempt left, and how long until the
// next one, without spending anything. An address that never failed costs
// no lock.
func (l *limiter) spent(addr string) (bool, time.Duration) {
	if l.cfg.Burst < 0 || l.n.Load() == 0 {
		return false, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[addr]
	if b == nil {
		return false, 0
	}
	l.refillLocked(b, now)
	if b.tokens >= float64(l.cfg.Burst) {
		// Whole again and remembering no token: forgotten, so the lock is
		// skipped once no address has failed lately.
		if b.forgetOld(now); len(b.failed) == 0 && len(b.good) == 0 {
			delete(l.buckets, addr)
			l.n.Store(int64(len(l.buckets)))
		}
	}
	if b.tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - b.tokens) * float64(l.cfg.Every))
}

// failToken spends an attempt of r's address for a bearer token (or a
// malformed Authorization value) that failed authentication, unless the
// address sent the same one lately: a client retrying a revoked or rotated
// token costs its address one attempt, while every new guess costs one.
//
// A token of an unguessable shape (see unguessable) spends nothing: it is
// not a guess the budget bounds, and it is looked at even once the budget
// is spent.
func (l *limiter) failToken(r *http.Request, token string) {
	if l.cfg.Burst < 0 || unguessable(token) {
		return
	}
	addr := clientAddr(r)
	if len(token) > maxTokenLen {
		l.take(addr)
		return
	}
	fp := fingerprintOf(token)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketLocked(addr, now)
	if b == nil {
		return
	}
	b.forgetOld(now)
	if b.recall(fp, now) {
		return
	}
	l.takeLocked(b)
	b.remember(fp, now)
}

// forgetOld drops the failed tokens not sent for failedTokenMemory and the
// good ones not sent for goodTokenMemory.
func (b *bucket) forgetOld(now time.Time) {
	b.failed = forgetBefore(b.failed, now.Add(-failedTokenMemory).UnixNano())
	b.good = forgetBefore(b.good, now.Add(-goodTokenMemory).UnixNano())
}

// forgetBefore keeps the tokens of list sent after cutoff.
func forgetBefore(list []failedToken, cutoff int64) []failedToken {
	kept := list[:0]
	for _, f := range list {
		if f.seen > cutoff {
			kept = append(kept, f)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// recall reports whether fp is a remembered failed token, and if so marks
// it sent now.
func (b *bucket) recall(fp fingerprint, now time.Time) bool { return touch(b.failed, fp, now) }

// touch reports whether fp is in list, and if so marks it sent now.
func touch(list []failedToken, fp fingerprint, now time.Time) bool {
	for i := range list {
		if list[i].fp == fp {
			list[i].seen = now.UnixNano()
			return true
		}
	}
	return false
}

// remember adds fp to the failed tokens, in place of the token sent least
// recently when b already holds maxFailedTokens.
func (b *bucket) remember(fp fingerprint, now time.Time) {
	b.failed = rememberIn(b.failed, maxFailedTokens, fp, now)
}

// rememberIn adds fp to list, in place of the token sent least recently
// when it already holds max.
func rememberIn(list []failedToken, max int, fp fingerprint, now time.Time) []failedToken {
	f := failedToken{fp: fp, seen: now.UnixNano()}
	if len(list) < max {
		return append(list, f)
	}
	oldest := 0
	for i := range list {
		if list[i].seen < list[oldest].seen {
			oldest = i
		}
	}
	list[oldest] = f
	return list
}

// writeLimited answers 429 with Retry-After.
func writeLimited(w http.ResponseWriter, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, "rate_limited", "Too many attempts from this address; try again in "+strconv.Itoa(secs)+" s.")
}
