package e2e_test

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards loopback TCP connections to a target the test controls:
// it can cut every open connection (a dropped network), refuse new ones
// (a host that is away) and point at a new target (a restarted process).
type tcpProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	refuse bool
	conns  map[net.Conn]bool
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

// addr is the proxy's own host:port.
func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target, refuse := p.target, p.refuse
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", target, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); up.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, up); up.Close(); c.Close() }()
	}
}

// cut closes every forwarded connection.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// set points new connections at target, or refuses them.
func (p *tcpProxy) set(target string, refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target, p.refuse = target, refuse
}
