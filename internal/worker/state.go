package worker

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// loopHandle is one generation of a worker's loop, or the removal of a
// deleted worker (Manager.after).
type loopHandle struct {
	cancel context.CancelFunc
	done   chan struct{}
	// claiming is held while the loop claims: once the loop is cancelled
	// and claimed has returned, no claim of this loop is waiting any more
	// (a post can no longer hand it a task), and a task it was handed is
	// back in the queue.
	claiming sync.Mutex
}

// claimed waits until the loop, once cancelled, has stopped claiming.
func (h *loopHandle) claimed() {
	h.claiming.Lock()
	defer h.claiming.Unlock()
}

// worker is one agent's worker: its configuration and live state.
type worker struct {
	m *Manager

	// loop is guarded by m.mu (Manager.last keeps it once cancelled).
	loop *loopHandle

	pubMu sync.Mutex // serializes publish

	mu          sync.Mutex
	cfg         relay.WorkerConfig
	current     *relay.RunningTask
	last        *relay.LastRun
	errMsg      string
	resumesAt   time.Time
	starts      []time.Time // run starts in the last hour
	deleted     bool
	lastPublish *relay.WorkerStatus
}

func (w *worker) isDeleted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleted
}

func (w *worker) config() relay.WorkerConfig {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg
}

// status computes the state by precedence: disabled > running > paused >
// limited > error > idle.
func (w *worker) status() relay.WorkerStatus {
	paused, _ := w.m.isPaused()
	now := w.m.opts.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := relay.WorkerStatus{WorkerConfig: w.cfg}
	if w.current != nil {
		c := *w.current
		s.CurrentTask = &c
	}
	if w.last != nil {
		l := *w.last
		s.LastRun = &l
	}
	limited := !w.resumesAt.IsZero() && w.resumesAt.After(now)
	switch {
	case !w.cfg.Enabled || w.deleted:
		s.State = relay.WorkerDisabled
	case w.current != nil:
		s.State = relay.WorkerRunning
	case paused:
		s.State = relay.WorkerPaused
	case limited:
		s.State = relay.WorkerLimited
	case w.errMsg != "":
		s.State = relay.WorkerError
		s.Error = w.errMsg
	default:
		s.State = relay.WorkerIdle
	}
	if limited {
		s.ResumesAt = relay.FormatTime(w.resumesAt)
	}
	return s
}

// publish tells OnStatus the status if it changed since the last call.
func (w *worker) publish() {
	if w.m.opts.OnStatus == nil {
		return
	}
	// One publisher at a time, so a stale status never follows a fresh one.
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	s := w.status()
	w.mu.Lock()
	same := w.lastPublish != nil && reflect.DeepEqual(*w.lastPublish, s)
	if !same {
		w.lastPublish = &s
	}
	w.mu.Unlock()
	if !same {
		w.m.opts.OnStatus(s)
	}
}

func (w *worker) update(fn func(w *worker)) {
	w.mu.Lock()
	fn(w)
	w.mu.Unlock()
	w.publish()
}
