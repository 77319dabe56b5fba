package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Seccomp reports whether the kernel takes the socket filter: seccomp
// filters with SECCOMP_RET_ERRNO, on an architecture the filter knows.
func Seccomp() bool {
	if _, ok := seccompArches[runtime.GOARCH]; !ok {
		return false
	}
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return errno == 0
}

// nativeSocketFilter is the socket filter of this architecture, ready for
// the kernel.
func nativeSocketFilter() ([]unix.SockFilter, error) {
	a, ok := seccompArches[runtime.GOARCH]
	if !ok || !Seccomp() {
		return nil, errNoSeccomp
	}
	raw, err := socketFilter(a)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// installSocketFilter installs the filter on the calling thread, which must
// be locked to it and have no_new_privs set; the program it execs keeps it.
func installSocketFilter(filter []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		return fmt.Errorf("install the seccomp socket filter: %w", errno)
	}
	return nil
}
