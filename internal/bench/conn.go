package bench

// The load generator's own HTTP/1.1 connections. net/http's Transport
// hands every request to a writer goroutine and every response back from a
// reader goroutine of the connection; on the two cores the bench shares
// with the relay those hand-offs were about a third of the bench's own CPU,
// which the relay then did not get (docs/performance.md). Here a request
// is written and its response read on the caller's goroutine, over
// keep-alive connections the pool hands out one caller at a time.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// idleReuse is how long an idle connection is reused; the relay keeps one
// for two minutes, so a reused connection is not one it is closing.
const idleReuse = 30 * time.Second

// past is a deadline that ends a blocked read or write at once.
var past = time.Unix(1, 0)

// connPool is a set of keep-alive HTTP/1.1 connections to one server.
type connPool struct {
	addr    string // host:port to dial
	host    string // the Host header
	maxIdle int
	dialer  net.Dialer

	mu     sync.Mutex
	idle   []*rawConn
	closed bool
}

// rawConn is one connection with its buffers.
type rawConn struct {
	nc   net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	used time.Time // when it last answered
	done bool      // the server closes it after this answer
}

// newConnPool returns a pool for the http:// URL base, keeping up to
// maxIdle idle connections.
func newConnPool(base string, maxIdle int) (*connPool, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("bench: %q is not an http:// URL", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &connPool{addr: addr, host: u.Host, maxIdle: maxIdle}, nil
}

// answer is a response: its status, content type and whole body.
type answer struct {
	status int
	ctype  string
	body   []byte
}

// post sends POST path with header (a block of "Name: value\r\n" lines)
// and body, and reads the answer, on the caller's goroutine. ctx ending
// aborts it and closes the connection. A connection the server closed
// while it was idle is replaced once, before any of the answer was read.
func (p *connPool) post(ctx context.Context, path, header string, body []byte) (answer, error) {
	for attempt := 0; ; attempt++ {
		c, reused, err := p.get(ctx)
		if err != nil {
			return answer{}, err
		}
		a, err, gone := c.roundTrip(ctx, p.host, path, header, body)
		if err == nil {
			p.put(c)
			return a, nil
		}
		_ = c.nc.Close()
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		if !(reused && gone && attempt == 0) {
			return answer{}, err
		}
	}
}

// roundTrip writes one request on c and reads its answer. gone reports
// that the server had closed the connection before answering anything.
func (c *rawConn) roundTrip(ctx context.Context, host, path, header string, body []byte) (a answer, err error, gone bool) {
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(past) })
	defer func() {
		if !stop() && err == nil {
			err = ctx.Err() // the deadline may have cut the connection short
		}
	}()
	c.bw.WriteString("POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\n")
	c.bw.WriteString(header)
	c.bw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	c.bw.Write(body)
	if err := c.bw.Flush(); err != nil {
		return a, fmt.Errorf("write request: %w", err), true
	}
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if _, err := c.br.Peek(1); err != nil {
		return a, fmt.Errorf("read response: %w", err), true
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return a, fmt.Errorf("read response: %w", err), false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return a, fmt.Errorf("read response: %w", err), false
	}
	if len(data) > maxResponse {
		return a, fmt.Errorf("response over %d bytes", maxResponse), false
	}
	c.used, c.done = time.Now(), resp.Close
	return answer{status: resp.StatusCode, ctype: resp.Header.Get("Content-Type"), body: data}, nil, false
}

// get returns an idle connection (reused) or dials a new one.
func (p *connPool) get(ctx context.Context) (c *rawConn, reused bool, err error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		c = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if time.Since(c.used) < idleReuse {
			p.mu.Unlock()
			return c, true, nil
		}
		_ = c.nc.Close()
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, false, errors.New("bench: client closed")
	}
	nc, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	return &rawConn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}, false, nil
}

// put keeps c for the next caller, unless the pool is full or closed, the
// server closes c, or it sent more than was asked for.
func (p *connPool) put(c *rawConn) {
	p.mu.Lock()
	keep := !p.closed && !c.done && len(p.idle) < p.maxIdle && c.br.Buffered() == 0
	if keep {
		p.idle = append(p.idle, c)
	}
	p.mu.Unlock()
	if !keep {
		_ = c.nc.Close()
	}
}

// close closes the idle connections and every one handed back later.
func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		_ = c.nc.Close()
	}
}
