package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// seccompData encodes struct seccomp_data for x/net/bpf's virtual machine,
// which loads words in network byte order: each 32-bit field is written
// big-endian at the offset where the kernel (little-endian amd64 and arm64)
// reads it natively, so both read the same values.
func seccompData(arch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[seccompNR:], nr)
	binary.BigEndian.PutUint32(b[seccompArchO:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[seccompArg0+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[seccompArg0+8*i+4:], uint32(a>>32))
	}
	return b
}

// Ensure the socket filter of each architecture refuses (EPERM) socket(2)
// of AF_UNIX, io_uring, pidfd_getfd and the keyring calls, kills a process making another
// ABI's system calls, and allows the rest: other socket families, socketpair(2) of AF_UNIX,
// ordinary calls.
func TestSocketFilter(t *testing.T) {
	const allow, deny, kill = seccompRetAllow, seccompRetErrno | errnoEPERM, seccompRetKill
	const afInet, afInet6, afNetlink, sockStream = 2, 10, 16, 1
	// The numbers of golang.org/x/sys/unix's zsysnum_linux_{amd64,arm64}.go.
	nrs := map[string]struct{ socket, socketpair, read, connect, addKey, requestKey, keyctl uint32 }{
		"amd64": {41, 53, 0, 42, 248, 249, 250},
		"arm64": {198, 199, 63, 203, 217, 218, 219},
	}
	for goarch, a := range seccompArches {
		n := nrs[goarch]
		raw, err := socketFilter(a)
		if err != nil {
			t.Fatal(err)
		}
		prog, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatalf("%s: the filter does not disassemble", goarch)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		tests := []struct {
			name string
			data []byte
			want int
		}{
			{"socket AF_UNIX", seccompData(a.audit, n.socket, afUnix, sockStream), deny},
			{"socket AF_UNIX, high bits set", seccompData(a.audit, n.socket, 0xffffffff00000000|afUnix, sockStream), deny},
			{"socket AF_INET", seccompData(a.audit, n.socket, afInet, sockStream), allow},
			{"socket AF_INET6", seccompData(a.audit, n.socket, afInet6, sockStream), allow},
			{"socket AF_NETLINK", seccompData(a.audit, n.socket, afNetlink, 3), allow},
			{"socketpair AF_UNIX", seccompData(a.audit, n.socketpair, afUnix, sockStream), allow},
			{"connect", seccompData(a.audit, n.connect, 3), allow},
			{"read", seccompData(a.audit, n.read, 0), allow},
			{"io_uring_setup", seccompData(a.audit, 425, 8), deny},
			{"io_uring_enter", seccompData(a.audit, 426), deny},
			{"io_uring_register", seccompData(a.audit, 427), deny},
			{"pidfd_getfd", seccompData(a.audit, 438), deny},
			{"add_key", seccompData(a.audit, n.addKey), deny},
			{"request_key", seccompData(a.audit, n.requestKey), deny},
			{"keyctl", seccompData(a.audit, n.keyctl, 0), deny},
			{"another ABI (i386 socketcall)", seccompData(0x40000003, 102, 1), kill},
			{"another ABI, an ordinary call", seccompData(0x40000028, n.read), kill},
		}
		if a.x32 {
			tests = append(tests, struct {
				name string
				data []byte
				want int
			}{"x32 socket", seccompData(a.audit, x32Bit|n.socket, afUnix), kill})
		}
		for _, tt := range tests {
			got, err := vm.Run(tt.data)
			if err != nil || got != tt.want {
				t.Errorf("%s %s: %#x, %v; want %#x", goarch, tt.name, got, err, tt.want)
			}
		}
	}
}
