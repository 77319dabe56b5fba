package web

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// fakeNow is a clock the limiter tests move by hand.
type fakeNow struct{ t time.Time }

func (c *fakeNow) now() time.Time { return c.t }

// newTestLimiter is a limiter with the default budget on a fake clock.
func newTestLimiter() (*limiter, *fakeNow) {
	c := &fakeNow{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return newLimiter(DefaultRateLimit, c.now), c
}

// failFrom reports that token failed from addr.
func (l *limiter) failFrom(addr, token string) {
	l.failToken(&http.Request{RemoteAddr: addr + ":40000"}, token)
}

// left is addr's attempts left now (the whole budget when it has no
// bucket).
func (l *limiter) left(addr string) float64 {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[addr]; b != nil {
		l.refillLocked(b, now)
		return b.tokens
	}
	return float64(l.cfg.Burst)
}

// checkBounds fails t when the limiter holds more than it may: more than
// maxLimitedAddrs addresses, more than maxFailedTokens fingerprints for one,
// the same fingerprint twice, or a budget outside [0, Burst].
func (l *limiter) checkBounds(t testing.TB) (addrs, fingerprints int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buckets) > maxLimitedAddrs || int(l.n.Load()) != len(l.buckets) {
		t.Fatalf("%d addresses (n = %d); at most %d", len(l.buckets), l.n.Load(), maxLimitedAddrs)
	}
	for addr, b := range l.buckets {
		if len(b.failed) > maxFailedTokens || len(b.good) > maxGoodTokens {
			t.Fatalf("%s remembers %d failed and %d good tokens; at most %d and %d", addr, len(b.failed), len(b.good), maxFailedTokens, maxGoodTokens)
		}
		seen := map[fingerprint]bool{}
		for _, f := range b.failed {
			if seen[f.fp] {
				t.Fatalf("%s remembers a token twice", addr)
			}
			seen[f.fp] = true
		}
		if b.tokens < 0 || b.tokens > float64(l.cfg.Burst) {
			t.Fatalf("%s has %v attempts; want 0..%d", addr, b.tokens, l.cfg.Burst)
		}
		fingerprints += len(b.failed)
	}
	return len(l.buckets), fingerprints
}

// TestLimiterMemoryBounded sends many distinct wrong tokens from many
// addresses: the table never holds more than maxLimitedAddrs addresses nor
// an address more than maxFailedTokens fingerprints, so at most
// maxLimitedAddrs*maxFailedTokens in all.
func TestLimiterMemoryBounded(t *testing.T) {
	for _, tc := range []struct {
		name           string
		addrs, perAddr int
		// step is how far the clock moves after each failure.
		step time.Duration
		// lastIn is whether the last address finds room in the table.
		lastIn bool
	}{
		{"OneAddressManyTokens", 1, 5000, time.Second, true},
		{"OneAddressManyTokensAtOnce", 1, 5000, 0, true},
		{"ManyAddressesAtOnce", maxLimitedAddrs + 10, maxFailedTokens + 4, 0, false},
		// A bucket refills (30 s) about 7,500 addresses later: the table
		// fills, then prunes to make room for the newcomers.
		{"ManyAddressesOverTime", 2 * maxLimitedAddrs, maxFailedTokens + 4, 200 * time.Microsecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, clock := newTestLimiter()
			most, addr := 0, ""
			for a := 0; a < tc.addrs; a++ {
				addr = fmt.Sprintf("10.%d.%d.%d", a>>16&255, a>>8&255, a&255)
				for i := 0; i < tc.perAddr; i++ {
					l.failFrom(addr, "guess-"+addr+"-"+strconv.Itoa(i))
					clock.t = clock.t.Add(tc.step)
				}
				if a%1000 == 0 || a == tc.addrs-1 {
					_, n := l.checkBounds(t)
					most = max(most, n)
				}
			}
			if _, in := l.buckets[addr]; in != tc.lastIn {
				t.Fatalf("the last address has a bucket: %v; want %v", in, tc.lastIn)
			}
			if most > maxLimitedAddrs*maxFailedTokens {
				t.Fatalf("%d fingerprints; at most %d", most, maxLimitedAddrs*maxFailedTokens)
			}
			if tc.addrs == 1 && most != maxFailedTokens {
				t.Fatalf("one address remembers %d tokens; want %d", most, maxFailedTokens)
			}
		})
	}
}

// TestLimiterRemembersFailedTokens follows one address's memory of failed
// tokens: a repeat is free while it is remembered, the token sent least
// recently makes room for a new one, and a full bucket is forgotten once
// its tokens are (failedTokenMemory after they were last sent).
func TestLimiterRemembersFailedTokens(t *testing.T) {
	const addr = loopbackClient // every loopback address is one client
	l, clock := newTestLimiter()
	burst := float64(DefaultRateLimit.Burst)
	step := func(what string, do func(), wantLeft float64) {
		t.Helper()
		do()
		if got := l.left(addr); got != wantLeft {
			t.Fatalf("%s: %v attempts left; want %v", what, got, wantLeft)
		}
	}
	fail := func(tok string) func() { return func() { l.failFrom(addr, tok) } }
	wait := func(d time.Duration) func() {
		return func() { clock.t = clock.t.Add(d); l.spent(addr) }
	}

	step("a stale token", fail("stale"), burst-1)
	step("the stale token again", fail("stale"), burst-1)
	step("a refill", wait(DefaultRateLimit.Every), burst)
	if l.n.Load() != 1 {
		t.Fatal("a full bucket that remembers a token was forgotten")
	}
	for i := 0; i < 60; i++ {
		step("the stale token every 10 s", func() { wait(10 * time.Second)(); fail("stale")() }, burst)
	}
	// Fill the memory with new tokens while the stale one keeps coming:
	// the least recently sent new ones make room, never the stale one.
	for i := 0; i < 3*maxFailedTokens; i++ {
		fail("guess-" + strconv.Itoa(i))()
		fail("stale")()
		clock.t = clock.t.Add(DefaultRateLimit.Every)
	}
	now := l.left(addr)
	step("the stale token after many guesses", fail("stale"), now)
	step("the first guess again (pushed out)", fail("guess-0"), now-1)

	step("silence past the memory", wait(failedTokenMemory+time.Second), burst)
	if l.n.Load() != 0 {
		t.Fatalf("%d buckets after the memory ran out; want 0", l.n.Load())
	}
	step("the stale token after the memory ran out", fail("stale"), burst-1)
	step("an oversized token", fail(string(make([]byte, maxTokenLen+1))), burst-2)
	step("the oversized token again (not remembered)", fail(string(make([]byte, maxTokenLen+1))), burst-3)
}

// TestLimiterManyStaleClients has n clients on one address each retry its
// own stale token every second for three minutes, a retry being refused
// before its token is looked at while the budget is spent (as
// bearerAllowed does). Up to maxFailedTokens clients end up all
// remembered and the budget whole again; one more keeps it spent, as a
// guesser would.
func TestLimiterManyStaleClients(t *testing.T) {
	const addr = loopbackClient // every loopback address is one client
	for _, tc := range []struct {
		clients int
		settles bool
	}{
		{1, true},
		{DefaultRateLimit.Burst, true},
		{maxFailedTokens, true},
		{maxFailedTokens + 1, false},
	} {
		t.Run(strconv.Itoa(tc.clients), func(t *testing.T) {
			l, clock := newTestLimiter()
			for sec := 0; sec < 180; sec++ {
				clock.t = clock.t.Add(time.Second)
				for c := 0; c < tc.clients; c++ {
					if spent, _ := l.spent(addr); !spent {
						l.failFrom(addr, "stale-"+strconv.Itoa(c))
					}
				}
			}
			if whole := l.left(addr) == float64(DefaultRateLimit.Burst); whole != tc.settles {
				t.Fatalf("%d stale clients: %v attempts left after 3 min; want the whole budget: %v", tc.clients, l.left(addr), tc.settles)
			}
		})
	}
}

// FuzzLimiterBounded drives the limiter with failures of new and repeated
// tokens from a few addresses, clock steps, refunds and tokens that worked:
// its memory stays within bounds, a remembered token never spends, a new
// one spends one attempt when there is one, and one that worked is tried
// whatever the budget.
func FuzzLimiterBounded(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 1, 0, 1, 2, 3, 2, 0, 200})
	f.Add([]byte("stale stale stale guess guess guess guess guess guess guess guess"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		l, clock := newTestLimiter()
		fresh := 0
		for i := 0; i+1 < len(ops); i += 2 {
			addr := "10.0.0." + strconv.Itoa(int(ops[i]&3))
			arg := ops[i+1]
			switch (ops[i] >> 2) % 4 {
			case 0: // a new token
				fresh++
				before := l.left(addr)
				l.failFrom(addr, "new-"+strconv.Itoa(fresh))
				if before >= 1 && l.left(addr) != before-1 {
					t.Fatalf("a new token: %v attempts left after %v; want one less", l.left(addr), before)
				}
			case 1: // a token sent twice in a row
				tok := "repeat-" + strconv.Itoa(int(arg))
				l.failFrom(addr, tok)
				before := l.left(addr)
				l.failFrom(addr, tok)
				if l.left(addr) != before {
					t.Fatalf("a repeated token spent an attempt: %v → %v", before, l.left(addr))
				}
			case 2: // time passes
				clock.t = clock.t.Add(time.Duration(arg) * 500 * time.Millisecond)
				l.spent(addr)
			case 3:
				if arg&1 == 0 {
					l.refund(addr)
					break
				}
				// A token that worked is tried although the budget is spent.
				r, tok := &http.Request{RemoteAddr: addr + ":40000"}, "good-"+strconv.Itoa(int(arg%11))
				l.worked(r, tok)
				if !l.mayTry(r, tok) {
					t.Fatalf("a token that worked from %s is not tried", addr)
				}
			}
			l.checkBounds(t)
		}
	})
}

// Ensure an IPv6 client is its /64, the block a single host or network
// is given (its interfaces take any address in it, by privacy extensions
// or by hand): wrong tokens from 2001:db8::1, ::2 and so on share one
// budget, while another /64 and IPv4 clients keep theirs; an address with
// a zone counts as its address. Before, each of the 2^64 addresses had a
// budget of its own, so a relay listening beyond loopback bounded no
// guesser with a /64, and such a guesser could fill the limiter's table
// (10,000 addresses), which then refused every new client's sign-in.
func TestIPv6ClientIsItsSubnet(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"[2001:db8::1]:1", "[2001:db8::ffff:1]:2"},
		{"[2001:db8:0:7:1:2:3:4]:1", "[2001:db8:0:7::9]:2"},
		{"[fe80::1%eth0]:1", "[fe80::2%eth1]:2"},
	} {
		if a, b := clientAddr(&http.Request{RemoteAddr: tc.a}), clientAddr(&http.Request{RemoteAddr: tc.b}); a != b {
			t.Errorf("%s and %s are clients %q and %q; want one", tc.a, tc.b, a, b)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"[2001:db8::1]:1", "[2001:db8:0:1::1]:2"},
		{"192.0.2.1:1", "192.0.2.2:2"},
		{"[::ffff:192.0.2.1]:1", "[::ffff:192.0.2.2]:2"},
	} {
		if a, b := clientAddr(&http.Request{RemoteAddr: tc.a}), clientAddr(&http.Request{RemoteAddr: tc.b}); a == b {
			t.Errorf("%s and %s are one client %q; want two", tc.a, tc.b, a)
		}
	}
	l, _ := newTestLimiter()
	for i := range DefaultRateLimit.Burst {
		l.failToken(&http.Request{RemoteAddr: "[2001:db8::" + strconv.FormatInt(int64(i+1), 16) + "]:40000"}, "guess-"+strconv.Itoa(i))
	}
	if spent, _ := l.spent(clientAddr(&http.Request{RemoteAddr: "[2001:db8::beef]:1"})); !spent {
		t.Error("ten guesses from ten addresses of one /64 left it budget")
	}
}
