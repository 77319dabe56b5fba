package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
)

// A task handed to a waiting claim must reach a caller that is there, or go
// back to the queue at once: otherwise it stays claimed by nobody for the
// claim's lease (up to 24 h). claimAnswer gives it back itself when the
// caller is gone before the answer (relay.CallerGone: the request's context
// ended, or its connection was closed behind a pipelined byte, which
// net/http no longer watches). What fails later, the answer's write or its
// flush, is seen only where the answer is written: the tool registers the
// give-back with the request's delivery (onUndelivered), and the writer of
// the answer (the lean path, or keepAnswering for mcp-go's) runs it when
// the answer could not be written (finish).

// delivery is what a request's answer must do when it cannot be written.
type delivery struct {
	mu    sync.Mutex
	undel []func(context.Context) error
}

type deliveryKey struct{}

// withDelivery returns ctx carrying a new delivery for its request's answer.
func withDelivery(ctx context.Context) (context.Context, *delivery) {
	d := &delivery{}
	return context.WithValue(ctx, deliveryKey{}, d), d
}

// onUndelivered registers fn to run if the answer of ctx's request cannot be
// written to its caller; false when nothing writes ctx's answer with a
// delivery (fn will never run).
func onUndelivered(ctx context.Context, fn func(context.Context) error) bool {
	d, ok := ctx.Value(deliveryKey{}).(*delivery)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.undel = append(d.undel, fn)
	return true
}

// pending reports whether something waits on the answer's delivery.
func (d *delivery) pending() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.undel) > 0
}

// finish is called once the answer was written to w (writeErr is the
// write's error): with something waiting on the delivery, it flushes the
// answer to the connection, and when the write or the flush failed it runs
// what was registered, logging what fails.
func (d *delivery) finish(ctx context.Context, w http.ResponseWriter, writeErr error, log *slog.Logger) {
	d.mu.Lock()
	fns := d.undel
	d.undel = nil
	d.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	err := writeErr
	if err == nil {
		err = http.NewResponseController(w).Flush()
	}
	if err == nil {
		return
	}
	bg := context.WithoutCancel(ctx)
	for _, fn := range fns {
		if ferr := fn(bg); ferr != nil && log != nil {
			log.Warn("mcp: an answer that could not be delivered was not undone", "write", err, "err", ferr)
		}
	}
}

// errorWriter is a ResponseWriter that remembers the first write error.
type errorWriter struct {
	http.ResponseWriter
	err error
}

func (w *errorWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *errorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
