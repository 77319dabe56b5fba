package relay

import (
	"slices"
	"sync"
)

// Waiters wakes long-polling claims in-process. A claimer takes a channel
// for its slug (Watch), or registers a function (Notify), before trying to
// claim; whoever queues a task for that slug calls Wake, which closes the
// channel and calls the function. Nothing polls the database.
//
// The zero value is ready to use.
type Waiters struct {
	mu     sync.Mutex
	chans  map[string]chan struct{}
	funcs  map[string][]*notice
	closed bool
}

// notice is one function registered with Notify.
type notice struct{ f func() }

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

// Notify calls f once, the next time slug is woken (at once if the
// Waiters are closed), on the goroutine that wakes it: f must return
// quickly and must not call back into w. Register it before trying to
// claim, so no wake-up is missed. stop unregisters f; it reports whether
// it did so before f was called.
func (w *Waiters) Notify(slug string, f func()) (stop func() bool) {
	n := &notice{f: f}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		f()
		return func() bool { return false }
	}
	if w.funcs == nil {
		w.funcs = make(map[string][]*notice)
	}
	w.funcs[slug] = append(w.funcs[slug], n)
	w.mu.Unlock()
	return func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.funcs[slug]
		i := slices.Index(list, n)
		if i < 0 {
			return false
		}
		if len(list) == 1 {
			delete(w.funcs, slug)
		} else {
			w.funcs[slug] = slices.Delete(list, i, i+1)
		}
		return true
	}
}

// Wake wakes every current watcher of each slug.
func (w *Waiters) Wake(slugs ...string) {
	var due []*notice
	w.mu.Lock()
	for _, s := range slugs {
		if c, ok := w.chans[s]; ok {
			close(c)
			delete(w.chans, s)
		}
		if list, ok := w.funcs[s]; ok {
			due = append(due, list...)
			delete(w.funcs, s)
		}
	}
	w.mu.Unlock()
	call(due)
}

// WakeAll wakes every current watcher of every slug.
func (w *Waiters) WakeAll() {
	w.mu.Lock()
	due := w.wakeAll()
	w.mu.Unlock()
	call(due)
}

// Close wakes everyone, now and later: the relay is shutting down.
func (w *Waiters) Close() {
	w.mu.Lock()
	w.closed = true
	due := w.wakeAll()
	w.mu.Unlock()
	call(due)
}

// wakeAll closes every watcher's channel and returns the registered
// functions, now unregistered; the caller holds w.mu and calls them after
// releasing it.
func (w *Waiters) wakeAll() []*notice {
	for s, c := range w.chans {
		close(c)
		delete(w.chans, s)
	}
	var due []*notice
	for s, list := range w.funcs {
		due = append(due, list...)
		delete(w.funcs, s)
	}
	return due
}

// call calls the functions of notices that are due.
func call(due []*notice) {
	for _, n := range due {
		n.f()
	}
}
