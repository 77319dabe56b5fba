package worker

import (
	"context"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// runLoop claims and runs the worker's tasks until ctx ends (docs/workers.md,
// "Workers: agents that run unattended"): it idles while paused, holds back
// while the runs-per-hour limit is reached, waits for a task from the
// allowed senders, and runs it. It holds claiming while it claims.
func (w *worker) runLoop(ctx context.Context, claiming *sync.Mutex) {
	var lastBeat time.Time
	var lastLogged string
	o := w.m.opts
	for {
		if ctx.Err() != nil {
			return
		}
		cfg := w.config()
		slug := cfg.AgentSlug
		paused, wake := w.m.isPaused()
		beat := func() {
			if o.Now().Sub(lastBeat) >= heartbeatEvery {
				lastBeat = o.Now()
				// Presence only; a failure shows in the next claim.
				_, _ = o.Relay.Heartbeat(ctx, slug)
			}
		}
		if paused {
			w.publish()
			beat()
			w.m.sleep(ctx, wake, heartbeatEvery)
			continue
		}
		if resume, limited := w.limit(cfg); limited {
			w.publish()
			beat()
			w.m.sleep(ctx, wake, min(max(time.Until(resume), time.Second), heartbeatEvery))
			continue
		}
		w.publish()
		claiming.Lock()
		task, err := w.claim(ctx, cfg, wake)
		if task != nil {
			task = w.keep(ctx, *task)
		}
		claiming.Unlock()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			msg := relay.ErrorMessage(err)
			if !relay.IsDomain(err) {
				msg = "The worker could not check for tasks: " + err.Error()
			}
			w.update(func(w *worker) { w.errMsg = msg })
			if msg != lastLogged {
				lastLogged = msg
				w.m.log.Error("worker: claim failed", "agent", slug, "err", err)
			}
			w.m.sleep(ctx, wake, o.ErrorBackoff)
			continue
		}
		lastLogged = ""
		w.update(func(w *worker) { w.errMsg = "" })
		lastBeat = o.Now() // a claim attempt refreshes presence
		if task == nil {
			continue
		}
		// The run lives on the manager's context: Reload ends only the
		// claiming, Stop ends the run too.
		if err := w.run(w.m.ctx, cfg, *task); err != nil {
			w.m.log.Error("worker: run", "agent", slug, "task", task.ID, "err", err)
		}
	}
}

// keep returns task, just claimed, unless Reload or Stop (ctx) or a pause
// ended the claiming as a post handed the task to it: then the task goes
// back to the queue (for the loop that replaces this one, or for after
// the pause) instead of running under a configuration that has gone or
// while workers are paused, and keep returns nil. A task its sender
// cancelled meanwhile is not ours to give back; any other failure leaves
// it claimed until its lease runs out, so it is logged.
func (w *worker) keep(ctx context.Context, task relay.Task) *relay.Task {
	reason := reloadReason
	if ctx.Err() == nil {
		if paused, _ := w.m.isPaused(); !paused {
			return &task
		}
		reason = pauseReason
	}
	if _, err := w.m.opts.Relay.ReleaseTask(context.WithoutCancel(ctx), task.RecipientSlug, task.ID, reason); err != nil && relay.ErrorCode(err) != relay.ETaskUpdateDenied {
		w.m.log.Error("worker: give back a task claimed while stopping", "agent", task.RecipientSlug, "task", task.ID, "err", err)
	}
	return nil
}

// limit applies the runs-per-hour limit: it forgets starts older than an
// hour and, when the limit is reached, returns when the oldest start leaves
// the window.
func (w *worker) limit(cfg relay.WorkerConfig) (resume time.Time, limited bool) {
	now := w.m.opts.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	keep := w.starts[:0]
	for _, s := range w.starts {
		if now.Sub(s) < time.Hour {
			keep = append(keep, s)
		}
	}
	w.starts = keep
	perHour := cfg.RunsPerHour
	if perHour <= 0 {
		perHour = relay.DefaultRunsPerHour
	}
	if len(w.starts) >= perHour {
		w.resumesAt = w.starts[0].Add(time.Hour)
		return w.resumesAt, true
	}
	w.resumesAt = time.Time{}
	return time.Time{}, false
}

// claim waits up to Poll for the agent's next task from its allowed
// senders. A pause (wake) or Reload (ctx) ends the wait at once.
func (w *worker) claim(ctx context.Context, cfg relay.WorkerConfig, wake <-chan struct{}) (*relay.Task, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-wake:
			cancel()
		case <-cctx.Done():
		}
	}()
	senders := cfg.AllowedSenders
	if senders == nil {
		senders = []string{} // nobody allowed: claim nothing
	}
	return w.m.opts.Relay.ClaimNext(cctx, relay.ClaimInput{
		RecipientSlug: cfg.AgentSlug,
		Wait:          w.m.opts.Poll,
		LeaseSeconds:  LeaseSeconds,
		FromSenders:   senders,
		ForSessions:   targetSessions(cfg),
		// A task aimed at a live session is that chat's, unless the
		// worker is bound to the session.
		LeaveLiveSessions: cfg.SessionID == "",
		Via:               relay.ViaWorker,
	})
}

// sleep waits for d, a wake-up or the end of ctx.
func (m *Manager) sleep(ctx context.Context, wake <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-wake:
	case <-ctx.Done():
	}
}
