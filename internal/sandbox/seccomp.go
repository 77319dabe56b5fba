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
//   - changing another process's resource limits, scheduling or I/O
//     priority, which Landlock does not govern at any ABI: prlimit64(2)
//     with a new limit for another process than the caller (pid 0), as a
//     run could lower the reaper's limit on open files (it could then not
//     list the run's processes and would leave a setsid'd daemon to init)
//     or its CPU time (the kernel would kill it, or any process of the
//     user's, the relay's included); reading another's limits stays
//     allowed. sched_setscheduler (but to SCHED_OTHER), sched_setparam,
//     sched_setattr and sched_setaffinity of another process than the
//     caller (SCHED_IDLE would starve the reaper), ioprio_set of another
//     target than the caller (IOPRIO_WHO_PROCESS, 0) and setpriority(2)
//     of another target than (PRIO_PROCESS, 0) (PRIO_USER would renice
//     every process of the user). The filter cannot know the caller's own
//     id (or its threads'), so only 0 names it: glibc's setrlimit and
//     nice, Go's and libuv's calls use 0. A process naming itself or one
//     of its own threads by its id is refused too (EPERM):
//     pthread_setaffinity_np(pthread_self()), pthread_setschedprio,
//     setpriority(PRIO_PROCESS, gettid()), prlimit(getpid(), new limit),
//     sched_setattr(tid), as WebKit/JSC and Chromium set their threads'
//     priorities; those programs log the error and go on;
// and it kills (SIGSYS, "Bad system call") a process making a system call
// of another ABI than the native one (i386 and x32 on amd64, AArch32 on
// arm64), whose numbers (socketcall) the filter does not check: refusing
// each of them would leave such a program unable even to exit. System call
// number -1, which a tracer in the run (strace's fault injection, a
// debugger) sets to skip a call, is allowed (the kernel returns ENOSYS)
// rather than taken for an x32 call.
//
// A pid_t, id_t or int argument is read by the kernel as the low 32 bits
// of its 64-bit slot (the system call wrappers cast it), so the filter
// checks those bits alone; a pointer (prlimit64's new limit) is NULL only
// when both halves are 0.
//
// It is written with golang.org/x/net/bpf rather than a seccomp library:
// a few dozen instructions, no further module, and the same program runs
// in x/net/bpf's virtual machine in the unit tests on every system.

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
	// selfOnly are the numbers refused unless their first argument (a
	// pid) is 0, the caller: sched_setparam, sched_setattr,
	// sched_setaffinity.
	selfOnly []uint32
	// prlimit64, setpriority, ioprio_set and sched_setscheduler are those
	// calls' numbers.
	prlimit64, setpriority, ioprioSet, setscheduler uint32
}

const (
	// Offsets in struct seccomp_data: nr, arch, args[i] (each 64 bits;
	// the low 32 bits first on a little-endian system).
	seccompNR    = 0
	seccompArchO = 4
	seccompArg0  = 16

	seccompRetAllow = 0x7fff0000
	seccompRetKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	seccompRetErrno = 0x00050000
	errnoEPERM      = 1
	afUnix          = 1
	x32Bit          = 0x40000000
	prioProcess     = 0          // PRIO_PROCESS
	schedOther      = 0          // SCHED_OTHER
	schedResetFork  = 0x40000000 // SCHED_RESET_ON_FORK
	ioprioWhoProc   = 1          // IOPRIO_WHO_PROCESS
)

// seccompArgLo and seccompArgHi are the offsets of the low and high 32
// bits of argument i.
func seccompArgLo(i int) uint32 { return uint32(seccompArg0 + 8*i) }
func seccompArgHi(i int) uint32 { return seccompArgLo(i) + 4 }

// io_uring_setup, io_uring_enter, io_uring_register and pidfd_getfd have
// the same numbers on amd64 and arm64.
var seccompCommonBlocked = []uint32{425, 426, 427, 438}

// seccompArches are the architectures the filter knows, by GOARCH; blocked
// adds add_key, request_key and keyctl, whose numbers differ.
var seccompArches = map[string]seccompArch{
	"amd64": {audit: 0xc000003e, x32: true, socket: 41, blocked: append([]uint32{248, 249, 250}, seccompCommonBlocked...),
		selfOnly:  []uint32{142, 314, 203},
		prlimit64: 302, setpriority: 141, ioprioSet: 251, setscheduler: 144},
	"arm64": {audit: 0xc00000b7, socket: 198, blocked: append([]uint32{217, 218, 219}, seccompCommonBlocked...),
		selfOnly:  []uint32{118, 274, 122},
		prlimit64: 261, setpriority: 140, ioprioSet: 30, setscheduler: 119},
}

// bpfAsm lays out a BPF program with jumps to labels, resolved by
// assemble (seccomp's BPF jumps only forward).
type bpfAsm struct {
	prog   []bpf.Instruction
	labels map[string]int
	jumps  map[int]string
}

func (b *bpfAsm) load(off uint32) { b.prog = append(b.prog, bpf.LoadAbsolute{Off: off, Size: 4}) }

// argJumpIf jumps to target when the low 32 bits of argument i pass cond
// against val.
func (b *bpfAsm) argJumpIf(i int, cond bpf.JumpTest, val uint32, target string) {
	b.load(seccompArgLo(i))
	b.jumpIf(cond, val, target)
}

// jumpIf jumps to target when the accumulator passes cond against val,
// else goes on with the next instruction.
func (b *bpfAsm) jumpIf(cond bpf.JumpTest, val uint32, target string) {
	b.jumps[len(b.prog)] = target
	b.prog = append(b.prog, bpf.JumpIf{Cond: cond, Val: val})
}

// jump jumps to target.
func (b *bpfAsm) jump(target string) {
	b.jumps[len(b.prog)] = target
	b.prog = append(b.prog, bpf.Jump{})
}

func (b *bpfAsm) label(name string) { b.labels[name] = len(b.prog) }

func (b *bpfAsm) ret(val uint32) { b.prog = append(b.prog, bpf.RetConstant{Val: val}) }

// assemble resolves the jumps and assembles the program.
func (b *bpfAsm) assemble() ([]bpf.RawInstruction, error) {
	for at, target := range b.jumps {
		to, ok := b.labels[target]
		if !ok || to <= at {
			return nil, fmt.Errorf("seccomp filter: no label %q after instruction %d", target, at)
		}
		skip := to - at - 1
		switch ins := b.prog[at].(type) {
		case bpf.JumpIf:
			if skip > 255 {
				return nil, fmt.Errorf("seccomp filter: jump of %d instructions", skip)
			}
			ins.SkipTrue = uint8(skip)
			b.prog[at] = ins
		case bpf.Jump:
			ins.Skip = uint32(skip)
			b.prog[at] = ins
		}
	}
	raw, err := bpf.Assemble(b.prog)
	if err != nil {
		return nil, fmt.Errorf("assemble the seccomp filter: %w", err)
	}
	return raw, nil
}

// socketFilter assembles the filter for an architecture.
func socketFilter(a seccompArch) ([]bpf.RawInstruction, error) {
	b := &bpfAsm{labels: map[string]int{}, jumps: map[int]string{}}
	b.load(seccompArchO)
	b.jumpIf(bpf.JumpNotEqual, a.audit, "kill")
	b.load(seccompNR)
	// -1: a tracer skipping the call (above the x32 bit).
	b.jumpIf(bpf.JumpEqual, 0xffffffff, "allow")
	if a.x32 {
		b.jumpIf(bpf.JumpGreaterOrEqual, x32Bit, "kill")
	}
	for _, nr := range a.blocked {
		b.jumpIf(bpf.JumpEqual, nr, "deny")
	}
	b.jumpIf(bpf.JumpEqual, a.socket, "socket")
	b.jumpIf(bpf.JumpEqual, a.prlimit64, "prlimit64")
	b.jumpIf(bpf.JumpEqual, a.setpriority, "setpriority")
	b.jumpIf(bpf.JumpEqual, a.ioprioSet, "ioprio_set")
	b.jumpIf(bpf.JumpEqual, a.setscheduler, "sched_setscheduler")
	for _, nr := range a.selfOnly {
		b.jumpIf(bpf.JumpEqual, nr, "pid0")
	}
	b.jump("allow")

	// socket(family, …): not AF_UNIX.
	b.label("socket")
	b.argJumpIf(0, bpf.JumpEqual, afUnix, "deny")
	b.jump("allow")

	// prlimit64(pid, resource, new_limit, old_limit): the caller's, or no
	// new limit.
	b.label("prlimit64")
	b.argJumpIf(0, bpf.JumpEqual, 0, "allow")
	b.argJumpIf(2, bpf.JumpNotEqual, 0, "deny")
	b.load(seccompArgHi(2))
	b.jumpIf(bpf.JumpNotEqual, 0, "deny")
	b.jump("allow")

	// setpriority(which, who, prio): (PRIO_PROCESS, 0).
	b.label("setpriority")
	b.argJumpIf(0, bpf.JumpNotEqual, prioProcess, "deny")
	b.jump("who0")

	// ioprio_set(which, who, ioprio): (IOPRIO_WHO_PROCESS, 0).
	b.label("ioprio_set")
	b.argJumpIf(0, bpf.JumpNotEqual, ioprioWhoProc, "deny")
	b.label("who0")
	b.argJumpIf(1, bpf.JumpEqual, 0, "allow")
	b.jump("deny")

	// sched_setscheduler(pid, policy, param): SCHED_OTHER (with or without
	// SCHED_RESET_ON_FORK) for any process, the policy every process of
	// the user's has but a real-time one, which it cannot starve (Claude
	// Code sets it on its new threads, by their ids); another policy only
	// for the caller.
	b.label("sched_setscheduler")
	b.argJumpIf(1, bpf.JumpEqual, schedOther, "allow")
	b.argJumpIf(1, bpf.JumpEqual, schedOther|schedResetFork, "allow")

	// sched_set*(pid, …): pid 0.
	b.label("pid0")
	b.argJumpIf(0, bpf.JumpEqual, 0, "allow")

	b.label("deny")
	b.ret(seccompRetErrno | errnoEPERM)
	b.label("allow")
	b.ret(seccompRetAllow)
	b.label("kill")
	b.ret(seccompRetKill)
	return b.assemble()
}
