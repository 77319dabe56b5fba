package web

import "syscall"

// peerClosed cannot be asked without reading on Windows: a closed
// connection shows when its answer's write fails.
func peerClosed(syscall.RawConn) bool { return false }
