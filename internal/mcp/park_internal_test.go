package mcp

import (
	"net"
	"testing"
)

// TestUnwrapReplay: a handed-back connection is unwrapped at take-over,
// however often it was handed back, with the bytes it still had to replay
// after those already read.
func TestUnwrapReplay(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var conn net.Conn = a
	for range 50 {
		conn = &replayConn{Conn: conn}
	}
	got, next := unwrapReplay(conn, nil)
	if got != a || len(next) != 0 {
		t.Fatalf("unwrapped to %T with %q, want the connection under 50 hand-backs and nothing to replay", got, next)
	}
	got, next = unwrapReplay(&replayConn{Conn: &replayConn{Conn: a, next: []byte("C")}, next: []byte("B")}, []byte("A"))
	if got != a || string(next) != "ABC" {
		t.Fatalf("unwrapped to %T with %q, want the connection and ABC", got, next)
	}
}
