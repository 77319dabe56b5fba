package tick_test

import (
	"context"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/tick"
)

// Ensures Every calls fn repeatedly and returns once ctx ends, without a
// call after that.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick.Every(ctx, time.Millisecond, func() {
			calls++
			if calls == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Every did not return after its context ended")
	}
	if calls != 3 {
		t.Fatalf("calls = %d, want 3", calls)
	}
}
