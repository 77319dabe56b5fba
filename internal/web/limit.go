package web

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimit bounds the unauthenticated attempts (sign-in, enroll, and any
// request with a wrong bearer token) one client address may make: a bucket
// of Burst attempts per address, refilled by one every Every. A successful
// sign-in or enrollment gives its token back, so only failures (wrong
// tokens, bad invites) use the budget up. Once it is spent, every request
// from the address that carries a bearer token is answered 429 before the
// token is looked at, so a right guess is not told apart from a wrong one.
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
// have refilled are forgotten first, and if none has, the attempt is refused.
const maxLimitedAddrs = 10000

// limiter is a token bucket per client address.
type limiter struct {
	cfg RateLimit
	now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	// n is len(buckets), read without the lock.
	n atomic.Int64
}

// bucket is one address's budget: tokens as of last.
type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(cfg RateLimit, now func() time.Time) *limiter {
	return &limiter{cfg: cfg, now: now, buckets: map[string]*bucket{}}
}

// clientAddr is the peer's IP address. Proxy headers are not trusted: behind
// a proxy every client shares the proxy's budget, which errs on the safe side.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
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
	b := l.buckets[addr]
	if b == nil {
		if len(l.buckets) >= maxLimitedAddrs {
			l.pruneLocked(now)
		}
		if len(l.buckets) >= maxLimitedAddrs {
			return false, l.cfg.Every
		}
		b = &bucket{tokens: float64(l.cfg.Burst), last: now}
		l.buckets[addr] = b
		l.n.Store(int64(len(l.buckets)))
	}
	l.refillLocked(b, now)
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

// pruneLocked forgets the addresses whose bucket is full again.
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
		// Whole again: forgotten, so the lock is skipped once no address
		// has failed lately.
		delete(l.buckets, addr)
		l.n.Store(int64(len(l.buckets)))
	}
	if b.tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1 - b.tokens) * float64(l.cfg.Every))
}

// fail spends an attempt of r's address for a failed authentication.
func (l *limiter) fail(r *http.Request) { l.take(clientAddr(r)) }

// writeLimited answers 429 with Retry-After.
func writeLimited(w http.ResponseWriter, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, "rate_limited", "Too many attempts from this address; try again in "+strconv.Itoa(secs)+" s.")
}
