package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
)

// mcp-go writes no response at all once the request's context has ended.
// That is right when the client went away, but the relay also ends request
// contexts to shut down (http.Server.BaseContext is cancelled so waiting
// claims return at once), and then a waiting claim_next_task must still
// answer {"status":"idle"} on the open connection instead of an empty body.
//
// So mcp-go gets a context that is not cancelled with the request once a
// tool call has started, while the tool itself runs on one that is: the
// request's end still stops the tool (ending a long-poll promptly), and the
// tool's answer is still written. Requests that are not tool calls (or whose
// context ends before the tool starts) keep the request's cancellation as is.

// callState links a request to the tool call it carries.
type callState struct {
	request context.Context // the request's own context
	started atomic.Bool     // a tool handler is running or ran
}

type callStateKey struct{}

// keepAnswering wraps the mcp-go handler as described above. It also
// writes the answer's delivery (see delivery.go): what a tool registered
// runs when the answer could not be written.
func keepAnswering(next http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &callState{request: r.Context()}
		base, d := withDelivery(context.WithValue(context.WithoutCancel(r.Context()), callStateKey{}, st))
		ctx, cancel := context.WithCancel(base)
		defer cancel()
		stop := context.AfterFunc(r.Context(), func() {
			if !st.started.Load() {
				cancel()
			}
		})
		defer stop()
		ew := &errorWriter{ResponseWriter: w}
		next.ServeHTTP(ew, r.WithContext(ctx))
		d.finish(base, ew, ew.err, log)
	})
}

// toolContext returns the context a tool runs on: ctx, also cancelled when
// the HTTP request's context ends. The returned function releases it.
func toolContext(ctx context.Context) (context.Context, context.CancelFunc) {
	st, ok := ctx.Value(callStateKey{}).(*callState)
	if !ok {
		return ctx, func() {}
	}
	st.started.Store(true)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(st.request, cancel)
	return ctx, func() { stop(); cancel() }
}
