package mcp

// Suspended tool calls. A parked claim_next_task (park.go) should wait
// without holding a goroutine: its stack, grown by the call, would be most
// of what a waiting agent costs. So on the parked path the call's context
// carries a suspension. A tool that can wait without blocking returns the
// suspended result at once and later gives its real result to the
// suspension (resume). Each middleware the suspended result passes on its
// way out registers what it would have done with the real result (after);
// once both the chain has returned and the result has come, the suspension
// runs those steps, innermost first as they would have run, and hands the
// final result to the caller's end function.
//
// Only the parked path puts a suspension in the context; everywhere else
// (mcp-go, the lean path for calls that do not wait) tools block as usual.

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// suspended is the result of a tool call that answers later through the
// suspension in its context. It never reaches a client.
var suspended = &mcp.CallToolResult{}

// suspension is one suspended tool call.
type suspension struct {
	mu       sync.Mutex
	after    []func(*mcp.CallToolResult, error) (*mcp.CallToolResult, error)
	end      func(*mcp.CallToolResult, error) // set when the chain has returned
	resumed  bool
	res      *mcp.CallToolResult
	err      error
	finished bool
}

type suspensionKey struct{}

// withSuspension returns ctx carrying s.
func withSuspension(ctx context.Context, s *suspension) context.Context {
	return context.WithValue(ctx, suspensionKey{}, s)
}

// suspensionFrom returns the suspension ctx carries, or nil.
func suspensionFrom(ctx context.Context) *suspension {
	s, _ := ctx.Value(suspensionKey{}).(*suspension)
	return s
}

// isSuspended reports whether a tool handler's return means its call was
// suspended.
func isSuspended(res *mcp.CallToolResult, err error) bool { return res == suspended && err == nil }

// deferStep registers f, a middleware's step for the real result, called on
// its way out with the suspended result. Steps run in the order they were
// registered.
func (s *suspension) deferStep(f func(*mcp.CallToolResult, error) (*mcp.CallToolResult, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = append(s.after, f)
}

// resume gives the call its real result, computed by result (a panic in it
// becomes an error). It is called once, by the tool, on any goroutine.
func (s *suspension) resume(result func() (*mcp.CallToolResult, error)) {
	res, err := recovered(result)
	s.mu.Lock()
	s.resumed, s.res, s.err = true, res, err
	ready := s.end != nil
	s.mu.Unlock()
	if ready {
		s.finish()
	}
}

// returned is called once the handler chain has returned the suspended
// result: end gets the final result, now if the call has resumed already
// or else when it does.
func (s *suspension) returned(end func(*mcp.CallToolResult, error)) {
	s.mu.Lock()
	s.end = end
	ready := s.resumed
	s.mu.Unlock()
	if ready {
		s.finish()
	}
}

// finish runs the middleware steps and the end function, once.
func (s *suspension) finish() {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return
	}
	s.finished = true
	res, err, after, end := s.res, s.err, s.after, s.end
	s.mu.Unlock()
	for _, f := range after {
		res, err = recovered(func() (*mcp.CallToolResult, error) { return f(res, err) })
	}
	end(res, err)
}

// recovered calls f, turning a panic into an error.
func recovered(f func() (*mcp.CallToolResult, error)) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("panicked: %v", p)
		}
	}()
	return f()
}
