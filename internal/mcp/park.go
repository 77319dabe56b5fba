package mcp

// Parked long-polls. A claim_next_task with waitMs can wait 25 seconds, and
// net/http holds a lot for each request while its handler runs: the
// connection's goroutine (its stack grown by decoding and authenticating
// the request), a 4 KiB read buffer, a 4 KiB write buffer, the response's
// own 2 KiB buffer and a background reader goroutine. With a thousand
// agents waiting that is most of the relay's memory.
//
// So a claim that may wait takes its connection over from net/http
// (Hijack) and runs on a goroutine of its own, whose stack starts small,
// while net/http's goroutine and buffers go. A second small goroutine
// blocks reading the connection: the client sends nothing while it waits
// for an answer, so a read that returns means it went away, and the claim
// ends as it would under net/http. Once the call has its answer, that
// reader is stopped, the answer written, and the connection handed back to
// the same http.Server, which serves the client's next request on it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// parkedWriteTimeout bounds writing a parked call's answer to a client
// that does not read it.
const parkedWriteTimeout = 10 * time.Second

// mayWait reports whether c is a claim that may wait for a task: the only
// call that is parked. A call with a waitMs out of range is answered at
// once with its error, by net/http as usual.
func mayWait(c leanCall) bool {
	if c.name != "claim_next_task" || len(c.args) == 0 {
		return false
	}
	var a struct {
		WaitMs json.RawMessage `json:"waitMs"`
	}
	if json.Unmarshal(c.args, &a) != nil {
		return false
	}
	ms, err := strconv.ParseInt(string(a.WaitMs), 10, 64) // a plain integer only
	return err == nil && ms > 0 && ms <= int64(maxWaitMs)
}

// park serves c on r's connection taken over from net/http, when c may
// wait and the connection can be taken (HTTP/1, a handler built with a
// lifetime). It reports whether it did; if not, nothing was written.
func (h *leanHandler) park(w http.ResponseWriter, r *http.Request, c leanCall) bool {
	if h.life == nil || r.ProtoMajor != 1 || !mayWait(c) {
		return false
	}
	hdr := w.Header().Clone() // what the guard set (CORS, cache) goes out with the answer
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// The connection goes back to its server after the answer, when the
	// client keeps connections (HTTP/1.1 without Connection: close).
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if r.ProtoMinor == 0 || r.Close {
		srv = nil
	}
	// The call keeps the request's values (the principal) but not its
	// cancellation, which net/http fires as this handler returns. It ends
	// when the client goes, when notifications/cancelled names it, or when
	// the server shuts down.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(h.life, cancel)
	h.parked.Add(1)
	h.nParked.Add(1)
	h.tParked.Add(1)
	hdrIn := http.Header(nil)  // no tool reads request headers; the parked call keeps none
	left := make(chan bool, 1) // the reader's verdict: true when the client left or sent more
	go func() {
		var b [1]byte
		n, err := conn.Read(b[:])
		gone := n > 0 || !errors.Is(err, os.ErrDeadlineExceeded)
		if gone {
			cancel()
		}
		left <- gone
	}()
	go func() {
		defer h.parked.Done()
		defer h.nParked.Add(-1)
		defer stop()
		defer cancel()
		status, body := h.run(ctx, cancel, hdrIn, c)
		// Stop the reader before answering: the client's next request
		// must reach the server, not it.
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		if <-left || conn.SetReadDeadline(time.Time{}) != nil {
			srv = nil
		}
		if writeParked(conn, hdr, status, body, srv != nil) != nil || srv == nil {
			_ = conn.Close() // the client may have gone; nobody is left to tell
			return
		}
		serveAgain(srv, conn)
	}()
	return true
}

// serveAgain hands conn back to srv, which serves the requests that follow
// on it as on any connection it accepted (timeouts, Shutdown). A server
// that is shutting down refuses it, and conn is closed.
func serveAgain(srv *http.Server, conn net.Conn) {
	l := &oneConn{c: conn, addr: conn.LocalAddr()}
	_ = srv.Serve(l) // returns once the connection is taken: its goroutine serves it
	if l.c != nil {
		_ = l.c.Close()
	}
}

// oneConn is a listener that yields one connection, then reports itself
// closed (which ends http.Server.Serve, not the connection).
type oneConn struct {
	c    net.Conn
	addr net.Addr
}

func (l *oneConn) Accept() (net.Conn, error) {
	if l.c == nil {
		return nil, net.ErrClosed
	}
	c := l.c
	l.c = nil
	return c, nil
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return l.addr }

// writeParked writes an HTTP/1.1 answer with hdr; unless keep, it ends
// the exchange (Connection: close). A 200 carries JSON; anything else is
// plain text, as http.Error writes it.
func writeParked(conn net.Conn, hdr http.Header, status int, body []byte, keep bool) error {
	if status == http.StatusOK {
		hdr.Set("Content-Type", "application/json")
	} else {
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		hdr.Set("X-Content-Type-Options", "nosniff")
		body = append(body, '\n')
	}
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	hdr.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	if !keep {
		hdr.Set("Connection", "close")
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	if err := hdr.Write(&b); err != nil {
		return err
	}
	b.WriteString("\r\n")
	b.Write(body)
	if err := conn.SetWriteDeadline(time.Now().Add(parkedWriteTimeout)); err != nil {
		return err
	}
	_, err := conn.Write(b.Bytes())
	return err
}

// Wait waits until every parked call has answered, or ctx ends. Calls end
// when the lifetime the handler was built with does; the server's Shutdown
// does not wait for them, as it does not track taken-over connections.
func (h *leanHandler) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		h.parked.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
