// Package tick runs a function at a fixed interval until a context ends:
// the one home of the ticker loop the relay's background jobs share.
package tick

import (
	"context"
	"time"
)

// Every calls fn every d (the first time after d) until ctx ends; it
// returns when ctx ends. A call of fn that outlasts d delays the next one.
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return
			}
			fn()
		}
	}
}
