package relay

import "sync"

// Waiters wakes long-polling claims in-process. A claimer takes a channel
// for its slug before trying to claim; whoever queues a task for that slug
// calls Wake, which closes the channel. Nothing polls the database.
//
// The zero value is ready to use.
type Waiters struct {
	mu     sync.Mutex
	chans  map[string]chan struct{}
	closed bool
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Watch returns a channel that is closed the next time slug is woken, or at
// Close. Take it before trying to claim, so no wake-up is missed.
func (w *Waiters) Watch(slug string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return closedChan
	}
	if w.chans == nil {
		w.chans = make(map[string]chan struct{})
	}
	c, ok := w.chans[slug]
	if !ok {
		c = make(chan struct{})
		w.chans[slug] = c
	}
	return c
}

// Wake wakes every current watcher of each slug.
func (w *Waiters) Wake(slugs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range slugs {
		if c, ok := w.chans[s]; ok {
			close(c)
			delete(w.chans, s)
		}
	}
}

// WakeAll wakes every current watcher of every slug.
func (w *Waiters) WakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wakeAll()
}

// Close wakes everyone, now and later: the relay is shutting down.
func (w *Waiters) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.wakeAll()
}

// wakeAll closes every watcher's channel; the caller holds w.mu.
func (w *Waiters) wakeAll() {
	for s, c := range w.chans {
		close(c)
		delete(w.chans, s)
	}
}
