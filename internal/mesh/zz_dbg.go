package mesh

import (
	"fmt"
	"sync/atomic"
	"time"
)

var dbg struct {
	queries, empty, flushes, pendingNs, ackNs, acks, pubs, handles, handleMsgs, applyNs, judgeNs atomic.Int64
}

func dbgAdd(c *atomic.Int64, t0 time.Time) { c.Add(int64(time.Since(t0))) }

func DbgString() string {
	d := &dbg
	f := func(c *atomic.Int64) float64 { return float64(c.Load()) / 1e6 }
	return fmt.Sprintf("queries %d empty %d flushes %d pending %.0fms ack %.0fms (%d acks) pubs %d | handles %d msgs %d judge %.0fms apply %.0fms",
		d.queries.Load(), d.empty.Load(), d.flushes.Load(), f(&d.pendingNs), f(&d.ackNs), d.acks.Load(), d.pubs.Load(), d.handles.Load(), d.handleMsgs.Load(), f(&d.judgeNs), f(&d.applyNs))
}

var dbgT struct{ pub, recv, applyStart, applyEnd atomic.Int64 }

func dbgMark(c *atomic.Int64) { c.Store(time.Now().UnixNano()) }
