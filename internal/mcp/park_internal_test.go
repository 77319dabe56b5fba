package mcp

import (
	"net"
	"testing"
)

// TestUnwrapReplay: a handed-back connection is unwrapped once its
// replayed bytes are read, however often it was handed back; one with
// bytes left to replay stays wrapped.
func TestUnwrapReplay(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var conn net.Conn = a
	for range 50 {
		conn = &replayConn{Conn: conn}
	}
	if got := unwrapReplay(conn); got != a {
		t.Fatalf("unwrapped to %T, want the connection under 50 hand-backs", got)
	}
	pending := &replayConn{Conn: &replayConn{Conn: a}, next: []byte("P")}
	if got := unwrapReplay(pending); got != pending {
		t.Fatalf("a connection with bytes to replay was unwrapped to %T", got)
	}
}
