package mcp

// Tidying up after a crowd. A thousand agents that start waiting at once
// leave the relay with the garbage of a thousand requests: net/http's
// buffers, dropped when park takes the connection over, and what decoding
// and the first attempt allocated, about 24 KiB a claim where a parked claim
// keeps under 10. Go collects garbage only once the heap has grown by as much
// again as it held after the last collection, and hands freed pages back to
// the OS slowly after that, so an idle relay went on showing some 15 MiB
// more than it used for as long as it stayed idle, often minutes.
//
// The tidier notices such a burst, the number of parked claims rising
// tidyStep above its lowest since the last tidy, and once no claim has
// parked for tidyQuiet (or tidyMaxWait after the burst was noticed),
// collects and returns the free memory at once. A steady crowd, whose claims
// end and park again at one level, never triggers it, and it runs at most
// once per tidyEvery.

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// The tidier's defaults (see above).
const (
	tidyStep    = 256
	tidyQuiet   = 100 * time.Millisecond
	tidyMaxWait = 2 * time.Second
	tidyEvery   = 30 * time.Second
)

// tidier returns the memory a burst of parked claims leaves behind.
type tidier struct {
	count                 func() int64 // claims parked now
	step                  int64
	quiet, maxWait, every time.Duration

	mu       sync.Mutex
	low      int64     // fewest parked since the last tidy
	armed    bool      // a burst was noticed and its tidy is pending
	noticed  time.Time // when it was
	lastPark time.Time // the last park since
	last     time.Time // when the last tidy ran
	timer    *time.Timer
	runs     atomic.Int64 // tidies run
}

// newTidier returns a tidier with the defaults that reads the parked
// count from count.
func newTidier(count func() int64) *tidier {
	return &tidier{count: count, step: tidyStep, quiet: tidyQuiet, maxWait: tidyMaxWait, every: tidyEvery}
}

// parked notes that a claim parked, n being parked now.
func (t *tidier) parked(n int64) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if wait, arm := t.note(n, now); arm {
		if t.timer == nil {
			t.timer = time.AfterFunc(wait, t.fire)
		} else {
			t.timer.Reset(wait)
		}
	}
}

// left notes that a parked claim ended, n being parked now.
func (t *tidier) left(n int64) {
	t.mu.Lock()
	t.low = min(t.low, n)
	t.mu.Unlock()
}

// note records a park at now with n parked and reports whether a tidy
// must be armed, and after how long: when n has risen a step above the
// low mark and none is pending. Called with mu held.
func (t *tidier) note(n int64, now time.Time) (wait time.Duration, arm bool) {
	if t.armed {
		t.lastPark = now
		return 0, false
	}
	if n-t.low < t.step {
		return 0, false
	}
	t.armed, t.noticed, t.lastPark = true, now, now
	return t.due(now), true
}

// due reports how much longer a pending tidy must wait at now: never less
// than until tidyEvery after the last tidy; then 0 once the parks have
// been quiet for tidyQuiet, or once it has waited tidyMaxWait since the
// burst was noticed (or since it could first run). Called with mu held.
func (t *tidier) due(now time.Time) time.Duration {
	latest := t.noticed.Add(t.maxWait)
	if !t.last.IsZero() {
		earliest := t.last.Add(t.every)
		if now.Before(earliest) {
			return earliest.Sub(now)
		}
		latest = later(latest, earliest.Add(t.maxWait))
	}
	quietAt := t.lastPark.Add(t.quiet)
	if !now.Before(quietAt) || !now.Before(latest) {
		return 0
	}
	return min(quietAt.Sub(now), latest.Sub(now))
}

// done records a tidy finished at now with n parked.
func (t *tidier) done(n int64, now time.Time) {
	t.armed, t.last, t.low = false, now, n
}

// fire runs a pending tidy when it is due (a collection that returns free
// memory to the OS), or waits again.
func (t *tidier) fire() {
	t.mu.Lock()
	if wait := t.due(time.Now()); wait > 0 {
		t.timer.Reset(wait)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	debug.FreeOSMemory()
	t.mu.Lock()
	t.done(t.count(), time.Now())
	t.mu.Unlock()
	t.runs.Add(1)
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
