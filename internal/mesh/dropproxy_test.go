package mesh

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// dropProxy stands between a relay and its NATS server and forwards the
// NATS protocol both ways, except that it drops the first publish to a
// relay's inbox whose message holds drop (once armed): the publish that
// fails in the middle of a window of them, while later ones go on.
type dropProxy struct {
	ln       net.Listener
	upstream string

	mu      sync.Mutex
	drop    []byte
	all     bool // drop every publish to an inbox
	dropped int
	conns   []net.Conn
}

func newDropProxy(t *testing.T, upstream string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, upstream: upstream}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *dropProxy) url() string { return "nats://" + p.ln.Addr().String() }

// arm makes the proxy drop the next publish to an inbox holding marker.
func (p *dropProxy) arm(marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop = []byte(marker)
}

// dropAll makes the proxy drop every publish to an inbox from now on: none
// is stored, so none is answered.
func (p *dropProxy) dropAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = true
}

// count is how many publishes the proxy dropped.
func (p *dropProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

func (p *dropProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *dropProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go func() {
			_, _ = io.Copy(c, up)
			c.Close()
		}()
		go func() {
			p.forward(up, c)
			up.Close()
		}()
	}
}

// forward copies the client's protocol to the server, op by op, leaving
// out the publish the proxy is armed to drop.
func (p *dropProxy) forward(dst io.Writer, src io.Reader) {
	r := bufio.NewReader(src)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		f := strings.Fields(string(line))
		var payload []byte
		if len(f) >= 3 && (f[0] == "PUB" || f[0] == "HPUB") {
			size, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				return
			}
			payload = make([]byte, size+2) // and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			if p.dropping(f[1], payload) {
				continue
			}
		}
		if _, err := dst.Write(append(line, payload...)); err != nil {
			return
		}
	}
}

// dropping reports whether a publish to subj with payload is the one to
// drop, and disarms the proxy if so.
func (p *dropProxy) dropping(subj string, payload []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.all && strings.HasPrefix(subj, subjectPrefix) {
		p.dropped++
		return true
	}
	if p.drop == nil || !strings.HasPrefix(subj, subjectPrefix) || !bytes.Contains(payload, p.drop) {
		return false
	}
	p.drop = nil
	p.dropped++
	return true
}
