package sandbox

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// The socket filter: a seccomp program the confined child installs after
// Landlock, before it execs the CLI (it holds across exec and fork). It
// refuses, with EPERM:
//   - socket(2) of the AF_UNIX family: Landlock below ABI 9 does not govern
//     connect(2) to a Unix socket by path (the D-Bus session bus, an SSH or
//     GPG agent, Docker's socket); socketpair(2) stays allowed (Node/libuv
//     and others connect their children's stdio with it), as a stream pair
//     reaches nothing but itself (a datagram pair can still send to a
//     datagram socket by path, such as the system log's);
//   - io_uring_setup, io_uring_enter and io_uring_register: io_uring makes
//     sockets (IORING_OP_SOCKET) without passing through the filter; the
//     CLIs' runtimes fall back to plain system calls when it is refused;
//   - pidfd_getfd: taking a socket from another process (Landlock's ptrace
//     rule already refuses that for a relay of an ordinary user);
//   - keyctl, add_key and request_key: the kernel's keyrings (the user's
//     keyring and the login session's hold credentials such as Kerberos
//     tickets and encryption keys), which Landlock does not govern;
// and it kills (SIGSYS, "Bad system call") a process making a system call
// of another ABI than the native one (i386 and x32 on amd64, AArch32 on
// arm64), whose numbers (socketcall) the filter does not check: refusing
// each of them would leave such a program unable even to exit.
//
// It is written with golang.org/x/net/bpf rather than a seccomp library:
// a dozen instructions, one rule, no further module, and the same program
// runs in x/net/bpf's virtual machine in the unit tests on every system.

// seccompArch is what the filter checks for one architecture.
type seccompArch struct {
	// audit is the AUDIT_ARCH_* value of the native ABI.
	audit uint32
	// x32 refuses system call numbers with the x32 bit (amd64).
	x32 bool
	// socket is socket(2)'s number.
	socket uint32
	// blocked are the numbers refused whatever their arguments.
	blocked []uint32
}

const (
	// Offsets in struct seccomp_data: nr, arch, args[0] (its low 32 bits on
	// a little-endian system; the kernel reads the family as an int).
	seccompNR    = 0
	seccompArchO = 4
	seccompArg0  = 16

	seccompRetAllow = 0x7fff0000
	seccompRetKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	seccompRetErrno = 0x00050000
	errnoEPERM      = 1
	afUnix          = 1
	x32Bit          = 0x40000000
)

// io_uring_setup, io_uring_enter, io_uring_register and pidfd_getfd have
// the same numbers on amd64 and arm64.
var seccompCommonBlocked = []uint32{425, 426, 427, 438}

// seccompArches are the architectures the filter knows, by GOARCH; blocked
// adds add_key, request_key and keyctl, whose numbers differ.
var seccompArches = map[string]seccompArch{
	"amd64": {audit: 0xc000003e, x32: true, socket: 41, blocked: append([]uint32{248, 249, 250}, seccompCommonBlocked...)},
	"arm64": {audit: 0xc00000b7, socket: 198, blocked: append([]uint32{217, 218, 219}, seccompCommonBlocked...)},
}

// socketFilter assembles the filter for an architecture.
func socketFilter(a seccompArch) ([]bpf.RawInstruction, error) {
	// Jumps to "allow" or "deny" are resolved once the program is laid out.
	type jump struct {
		at     int
		target string
	}
	var prog []bpf.Instruction
	var jumps []jump
	jumpTo := func(cond bpf.JumpTest, val uint32, target string) {
		jumps = append(jumps, jump{len(prog), target})
		prog = append(prog, bpf.JumpIf{Cond: cond, Val: val})
	}
	prog = append(prog, bpf.LoadAbsolute{Off: seccompArchO, Size: 4})
	jumpTo(bpf.JumpNotEqual, a.audit, "kill")
	prog = append(prog, bpf.LoadAbsolute{Off: seccompNR, Size: 4})
	if a.x32 {
		jumpTo(bpf.JumpGreaterOrEqual, x32Bit, "kill")
	}
	for _, nr := range a.blocked {
		jumpTo(bpf.JumpEqual, nr, "deny")
	}
	jumpTo(bpf.JumpNotEqual, a.socket, "allow")
	prog = append(prog, bpf.LoadAbsolute{Off: seccompArg0, Size: 4})
	jumpTo(bpf.JumpEqual, afUnix, "deny")
	targets := map[string]int{"allow": len(prog), "deny": len(prog) + 1, "kill": len(prog) + 2}
	prog = append(prog, bpf.RetConstant{Val: seccompRetAllow}, bpf.RetConstant{Val: seccompRetErrno | errnoEPERM},
		bpf.RetConstant{Val: seccompRetKill})
	for _, j := range jumps {
		skip := targets[j.target] - j.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp filter: jump of %d instructions", skip)
		}
		ji := prog[j.at].(bpf.JumpIf)
		ji.SkipTrue = uint8(skip)
		prog[j.at] = ji
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
	}
	return raw, nil
}
