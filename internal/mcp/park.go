package mcp

// Parked long-polls. A claim_next_task with waitMs can wait 25 seconds, and
// net/http holds a lot for each request while its handler runs: the
// connection's goroutine (its stack grown by decoding and authenticating
// the request), a 4 KiB read buffer, a 4 KiB write buffer, the response's
// own 2 KiB buffer and a background reader goroutine. With a thousand
// agents waiting that is most of the relay's memory.
//
// So a claim that may wait takes its connection over from net/http
// (Hijack), and net/http's goroutine and buffers go. The call's first
// attempt runs on net/http's goroutine before it returns; a claim that then
// waits holds no goroutine of its own (suspend.go, and the store's
// StartClaim): a post, its time running out or its caller leaving starts
// one to answer. A small goroutine reads the connection meanwhile, as
// net/http's background reader does: a read that ends the connection (EOF,
// reset) means the client went away, and the claim ends. Bytes that arrive
// are the start of the client's next request. When the answer has gone
// out, the reader waits for that request (at most the server's idle
// timeout, and not past shutdown) and hands the connection, with the bytes
// it read, back to the same http.Server, which serves it from there as any
// connection it accepted.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// parkedWriteTimeout bounds writing a parked call's answer to a client
// that does not read it (a variable for tests).
var parkedWriteTimeout = 10 * time.Second

// past is a read deadline that stops a read at once.
var past = time.Unix(1, 0)

// mayWait reports whether c is a claim that may wait for a task: the only
// call that is parked. waitMs is read as the tool reads it; a call whose
// waitMs the tool refuses is answered at once with its error, by net/http
// as usual.
func mayWait(c leanCall) bool {
	if c.name != "claim_next_task" {
		return false
	}
	var req mcp.CallToolRequest
	req.Params.RawArguments = c.args
	a := parseArgs(req)
	ms := a.integer("waitMs", 0, 0, maxWaitMs)
	return a.err() == nil && ms > 0
}

// parkedConns counts the connections parked calls hold, from the
// take-over until the connection is closed or handed back, so that Wait
// can wait for them. None is taken once the lifetime has ended.
type parkedConns struct {
	mu   sync.Mutex
	n    int
	none chan struct{} // closed when n drops to 0
}

// enter counts one more connection, unless life has ended.
func (p *parkedConns) enter(life context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if life.Err() != nil {
		return false
	}
	if p.n == 0 {
		p.none = make(chan struct{})
	}
	p.n++
	return true
}

// leave counts one connection less.
func (p *parkedConns) leave() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 {
		close(p.none)
	}
}

// park serves c on r's connection taken over from net/http, when c may
// wait and the connection can be taken (HTTP/1, a handler built with a
// lifetime that has not ended). It reports whether it did; if not,
// nothing was written.
func (h *leanHandler) park(w http.ResponseWriter, r *http.Request, c leanCall) bool {
	if h.life == nil || r.ProtoMajor != 1 || !mayWait(c) || !h.conns.enter(h.life) {
		return false
	}
	hdr := w.Header().Clone() // what the guard set (CORS, cache) goes out with the answer
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		h.conns.leave()
		return false
	}
	// What net/http read past this request (a pipelined request, or the
	// byte its background read took) starts the client's next request.
	var next []byte
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		next = bytes.Clone(b)
	}
	conn, next = unwrapReplay(conn, next)
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
	h.tidy.parked(h.nParked.Add(1))
	h.tParked.Add(1)
	answered := make(chan func() bool, 1) // the call's end: nil, or how to stop waiting for the next request
	go h.readParked(conn, next, srv, cancel, answered)
	// The first attempt runs here, on net/http's goroutine; a claim that
	// waits then holds no goroutine until it answers (suspend.go). A
	// service whose claims block gets a goroutine of its own instead, so
	// that net/http's, with its grown stack, goes.
	end := func(status int, body []byte) {
		defer func() { h.tidy.left(h.nParked.Add(-1)) }()
		defer stop()
		defer cancel()
		keep := srv != nil && h.life.Err() == nil
		write := parkedWriteTimeout
		if !keep {
			write = min(write, time.Second) // within Shutdown's wait for parked calls
		}
		if writeParked(conn, hdr, status, body, keep, write) != nil || conn.SetWriteDeadline(time.Time{}) != nil {
			keep = false
		}
		if !keep {
			_ = conn.SetReadDeadline(past)
			answered <- nil
			return
		}
		// The reader now waits for the next request: as long as the server
		// keeps an idle connection, and not past shutdown.
		if d := idleTimeout(srv); d > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(d))
		}
		answered <- context.AfterFunc(h.life, func() { _ = conn.SetReadDeadline(past) })
	}
	if h.suspends {
		h.start(ctx, cancel, c, end)
	} else {
		go h.start(ctx, cancel, c, end)
	}
	return true
}

// readParked reads a parked call's connection, as net/http's background
// reader does: the client going away cancels the call, and bytes that
// arrive start its next request. Once the call has answered (answered), it
// hands the connection with those bytes back to srv, or closes it.
func (h *leanHandler) readParked(conn net.Conn, next []byte, srv *http.Server, cancel context.CancelFunc, answered <-chan func() bool) {
	defer h.conns.leave()
	if len(next) == 0 {
		var b [1]byte
		n, err := conn.Read(b[:])
		switch {
		case n > 0:
			next = b[:1]
		case !errors.Is(err, net.ErrClosed) && !isTimeout(err):
			cancel() // the client went away
		}
	}
	idle := <-answered
	// A lifetime that ended meanwhile may still stop reads on conn
	// (its AfterFunc has started): the server must not get it then.
	if idle == nil || !idle() || h.life.Err() != nil || len(next) == 0 {
		_ = conn.Close()
		return
	}
	if conn.SetReadDeadline(time.Time{}) != nil {
		_ = conn.Close()
		return
	}
	serveAgain(srv, &replayConn{Conn: conn, next: next})
}

// isTimeout reports whether err is a read deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// idleTimeout is how long srv keeps an idle connection (0: no limit).
func idleTimeout(srv *http.Server) time.Duration {
	if srv.IdleTimeout != 0 {
		return srv.IdleTimeout
	}
	return srv.ReadTimeout
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

// replayConn is a connection whose first bytes were read already: its
// reads give them back first.
type replayConn struct {
	net.Conn
	next []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.next) > 0 {
		n := copy(p, c.next)
		c.next = c.next[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// unwrapReplay returns the connection under a handed-back one, with the
// bytes still to replay after next, so that a connection parked claim
// after parked claim is not wrapped once more each time.
func unwrapReplay(conn net.Conn, next []byte) (net.Conn, []byte) {
	for {
		rc, ok := conn.(*replayConn)
		if !ok {
			return conn, next
		}
		conn, next = rc.Conn, append(next, rc.next...)
	}
}

// CloseWrite half-closes the connection, as net/http does to a TCP one
// before it closes it.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// writeParked writes an HTTP/1.1 answer with hdr, within timeout; unless
// keep, it ends the exchange (Connection: close). A 200 carries JSON; anything else is
// plain text, as http.Error writes it.
func writeParked(conn net.Conn, hdr http.Header, status int, body []byte, keep bool, timeout time.Duration) error {
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
	if err := conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := conn.Write(b.Bytes())
	return err
}

// Wait waits until every parked call has answered and its connection is
// closed or back with its server, or ctx ends. Parked calls end when the
// lifetime the handler was built with does, and none is parked after
// that; the server's Shutdown does not wait for them, as it does not track
// taken-over connections.
func (h *leanHandler) Wait(ctx context.Context) error {
	h.conns.mu.Lock()
	none := h.conns.none
	n := h.conns.n
	h.conns.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case <-none:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
