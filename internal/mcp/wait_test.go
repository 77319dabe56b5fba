package mcp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A claim waiting for work is woken in-process by a post from another
// client and returns the task at once, long before its waitMs.
func TestClaimWaitWokenByPost(t *testing.T) {
	e := newEnv(t)
	alice := e.client(e.agent("alice"))
	bob := e.client(e.agent("bob"))

	done := callAsync(bob, "claim_next_task", map[string]any{"waitMs": 20000})
	eventually(t, 10*time.Second, "the claim to wait", func() bool { return e.svc.claims.Load() == 1 })

	var task relay.Task
	posted := time.Now()
	ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "Wake up", "instructions": "Now."}), &task)

	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("claim: %v", o.err)
		}
		var claim claimOut
		ok(t, o.res, &claim)
		if claim.Status != "task" || claim.Task == nil || claim.Task.ID != task.ID || claim.Task.Status != relay.StatusClaimed {
			t.Fatalf("claim = %+v, want task %s", claim, task.ID)
		}
		t.Logf("wake-up latency from post_task call to claim result: %v", o.at.Sub(posted))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting claim was not woken by post_task")
	}
}

// When the client gives up (its context ends, closing the connection), the
// server-side wait ends promptly instead of running out its 20 s.
func TestClaimWaitEndsWhenClientCancels(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	for _, version := range eras {
		t.Run(eraName(version), func(t *testing.T) {
			bob := e.clientAt(tok, version)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := bob.CallTool(ctx, toolRequest("claim_next_task", map[string]any{"waitMs": 20000}))
				errc <- err
			}()
			eventually(t, 10*time.Second, "the claim to wait", func() bool { return e.svc.claims.Load() == 1 })

			cancelled := time.Now()
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Logf("client error after cancel: %v", err)
			}
			eventually(t, 3*time.Second, "the server-side wait to end", func() bool { return e.svc.claims.Load() == 0 })
			t.Logf("server wait ended %v after the client cancelled", time.Since(cancelled))
		})
	}
}

// A waiting claim ends promptly, with idle, when the relay stops under it.
// Shutting down cancels every request's context, yet the claim still
// answers on its open connection (mcp-go alone would write nothing once the
// request's context ended); closing the service ends the wait too, where an
// error result is an answer as well.
func TestClaimWaitEndsWhenRelayStops(t *testing.T) {
	for _, tc := range []struct {
		name         string
		stop         func(e *env) error
		errorAnswers bool
	}{
		{"request contexts cancelled", func(e *env) error { e.stopRequests(); return nil }, false},
		{"service closed", func(e *env) error { return e.db.Close() }, true},
	} {
		// The latest protocol goes through mcp-go, the older ones through the
		// lean path (lean.go): both must answer.
		for _, version := range eras {
			t.Run(tc.name+"/"+eraName(version), func(t *testing.T) {
				e := newEnv(t)
				bob := e.clientAt(e.agent("bob"), version)

				done := callAsync(bob, "claim_next_task", map[string]any{"waitMs": 20000})
				eventually(t, 10*time.Second, "the claim to wait", func() bool { return e.svc.claims.Load() == 1 })

				stopped := time.Now()
				if err := tc.stop(e); err != nil {
					t.Fatalf("stop: %v", err)
				}
				select {
				case o := <-done:
					if o.err != nil {
						t.Fatalf("claim: %v", o.err)
					}
					if !tc.errorAnswers || !o.res.IsError {
						var claim claimOut
						ok(t, o.res, &claim)
						if claim.Status != "idle" {
							t.Fatalf("claim = %+v, want idle", claim)
						}
					}
					t.Logf("claim answered %v after the stop", o.at.Sub(stopped))
				case <-time.After(3 * time.Second):
					t.Fatal("stopping did not end the waiting claim")
				}
			})
		}
	}
}

// outcome is the end of a tool call made in the background.
type outcome struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

// callAsync calls a tool on another goroutine (which must not fail the test
// itself) and delivers the outcome.
func callAsync(c *client.Client, name string, args any) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := c.CallTool(context.Background(), toolRequest(name, args))
		done <- outcome{res, err, time.Now()}
	}()
	return done
}
