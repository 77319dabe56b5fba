package app

import (
	"net"
	"sync"
)

// pairListener accepts on two listeners as one (the relay's port on both
// loopback addresses): Accept returns the next connection of either, Addr
// is the first's, and Close closes both.
type pairListener struct {
	first, second net.Listener
	conns         chan net.Conn
	errs          chan error
	done          chan struct{}
	closeOnce     sync.Once
	closeErr      error
}

func newPairListener(first, second net.Listener) *pairListener {
	p := &pairListener{first: first, second: second, conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	go p.accept(first)
	go p.accept(second)
	return p
}

// accept hands l's connections to Accept until the pair is closed. An
// error goes to Accept too: a temporary one (too many open files) is
// retried, as http.Server retries it; any other ends the loop.
func (p *pairListener) accept(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			select {
			case p.errs <- err:
			case <-p.done:
				return
			}
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				continue
			}
			return
		}
		select {
		case p.conns <- c:
		case <-p.done:
			c.Close()
			return
		}
	}
}

// Accept returns the next connection of either listener.
func (p *pairListener) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case err := <-p.errs:
		return nil, err
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// Close closes both listeners; Accept then returns net.ErrClosed.
func (p *pairListener) Close() error {
	p.closeOnce.Do(func() {
		close(p.done)
		err1 := p.first.Close()
		err2 := p.second.Close()
		if err1 != nil {
			p.closeErr = err1
		} else {
			p.closeErr = err2
		}
	})
	return p.closeErr
}

// Addr is the first listener's address.
func (p *pairListener) Addr() net.Addr { return p.first.Addr() }
