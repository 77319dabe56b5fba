package web

import (
	"context"
	"net"
	"syscall"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ConnContext is the http.Server's ConnContext: each request on c can ask
// whether its caller closed c (relay.CallerGone), which net/http no longer
// watches once the caller sent a byte past its request (a pipelined next
// request): a waiting claim handed a task then would answer into a closed
// connection, a write that succeeds, and the task would stay claimed for
// its lease. The check asks the kernel, without reading (peerClosed).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ctx
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return ctx
	}
	return relay.WithCallerCheck(ctx, func() bool { return peerClosed(raw) })
}
