package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Change stream parameters.
const (
	// ChangeEvent is the SSE event name of a relay.Change; the native window
	// receives the same name as a Wails event.
	ChangeEvent = "relay:change"
	// eventBuffer is the subscription buffer; a client that falls further
	// behind is dropped and reconnects.
	eventBuffer = 256
	// keepAliveInterval spaces the keepalive comments.
	keepAliveInterval = 25 * time.Second
)

// serveEvents streams committed changes as server-sent events until the
// client goes away or the subscription ends (the service closed, or this
// client fell behind); the browser then reconnects and reloads.
func (h *handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	changes, cancel := h.svc.Subscribe(eventBuffer)
	defer cancel()

	send := h.openEventStream(w, "change stream")
	if !send("retry: 3000\n\n") {
		return
	}
	tick := time.NewTicker(keepAliveInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case c, ok := <-changes:
			if !ok {
				return
			}
			b, err := json.Marshal(c)
			if err != nil {
				h.log.Error("web: change stream: encode change", "type", c.Type, "err", err)
				continue
			}
			if !send("event: %s\ndata: %s\n\n", ChangeEvent, b) {
				return
			}
		case <-tick.C:
			if !send(": keepalive\n\n") {
				return
			}
		}
	}
}

// openEventStream starts a server-sent event stream on w (what names it in
// logs) and returns the function that writes and flushes one message; it
// reports false once the client is gone.
func (h *handler) openEventStream(w http.ResponseWriter, what string) (send func(format string, args ...any) bool) {
	rc := http.NewResponseController(w)
	// A server-wide write timeout must not cut the stream.
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		h.log.Warn("web: "+what+": clear write deadline", "err", err)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	return func(format string, args ...any) bool {
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
}
