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
// of AF_UNIX, io_uring, pidfd_getfd and the keyring calls, a new resource
// limit, scheduling policy, parameters, affinity, nice value or I/O
// priority for another process than the caller (or a group, or the user),
// kills a process making another ABI's system calls, and allows the rest:
// other socket families, socketpair(2) of AF_UNIX, the caller's own limits
// and priorities, reading another's limits, ordinary calls, and
// system call -1 (a tracer skipping a call; not taken for an x32 call).
func TestSocketFilter(t *testing.T) {
	const allow, deny, kill = seccompRetAllow, seccompRetErrno | errnoEPERM, seccompRetKill
	const afInet, afInet6, afNetlink, sockStream = 2, 10, 16, 1
	// The numbers of golang.org/x/sys/unix's zsysnum_linux_{amd64,arm64}.go.
	nrs := map[string]struct {
		socket, socketpair, read, connect, addKey, requestKey, keyctl                         uint32
		prlimit64, setpriority, ioprioSet, setscheduler, setparam, setattr, setaffinity, kill uint32
	}{
		"amd64": {41, 53, 0, 42, 248, 249, 250, 302, 141, 251, 144, 142, 314, 203, 62},
		"arm64": {198, 199, 63, 203, 217, 218, 219, 261, 140, 30, 119, 118, 274, 122, 129},
	}
	const pid, ptr, high = 4242, 0x7ffc12345678, 0xffffffff00000000
	const rlimitNofile, prioPgrp, prioUser, ioprioWhoUser = 7, 1, 2, 3
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
			{"prlimit64 of the caller, set", seccompData(a.audit, n.prlimit64, 0, rlimitNofile, ptr, 0), allow},
			{"prlimit64 of the caller, read", seccompData(a.audit, n.prlimit64, 0, rlimitNofile, 0, ptr), allow},
			{"prlimit64 of another, read", seccompData(a.audit, n.prlimit64, pid, rlimitNofile, 0, ptr), allow},
			{"prlimit64 of another, set", seccompData(a.audit, n.prlimit64, pid, rlimitNofile, ptr, 0), deny},
			{"prlimit64 of another, set, pointer in the high half", seccompData(a.audit, n.prlimit64, pid, rlimitNofile, high, 0), deny},
			{"prlimit64 of another, high bits of pid set", seccompData(a.audit, n.prlimit64, high|pid, rlimitNofile, ptr, 0), deny},
			{"prlimit64 of pid 0 in the low bits", seccompData(a.audit, n.prlimit64, high, rlimitNofile, ptr, 0), allow},
			{"setpriority of the caller", seccompData(a.audit, n.setpriority, prioProcess, 0, 10), allow},
			{"setpriority of another", seccompData(a.audit, n.setpriority, prioProcess, pid, 19), deny},
			{"setpriority of a group", seccompData(a.audit, n.setpriority, prioPgrp, 0, 19), deny},
			{"setpriority of the user", seccompData(a.audit, n.setpriority, prioUser, 0, 19), deny},
			{"setpriority of a user", seccompData(a.audit, n.setpriority, prioUser, 1000, 19), deny},
			{"ioprio_set of the caller", seccompData(a.audit, n.ioprioSet, ioprioWhoProc, 0, 7), allow},
			{"ioprio_set of another", seccompData(a.audit, n.ioprioSet, ioprioWhoProc, pid, 7), deny},
			{"ioprio_set of a user", seccompData(a.audit, n.ioprioSet, ioprioWhoUser, 0, 7), deny},
			{"kill (Landlock's)", seccompData(a.audit, n.kill, pid, 9), allow},
			{"sched_setscheduler of another, SCHED_OTHER", seccompData(a.audit, n.setscheduler, pid, schedOther, ptr), allow},
			{"sched_setscheduler of another, SCHED_OTHER|SCHED_RESET_ON_FORK", seccompData(a.audit, n.setscheduler, pid, schedOther|schedResetFork, ptr), allow},
			{"sched_setscheduler of another, SCHED_IDLE|SCHED_RESET_ON_FORK", seccompData(a.audit, n.setscheduler, pid, 5|schedResetFork, ptr), deny},
			{"sched_setscheduler of another, SCHED_BATCH", seccompData(a.audit, n.setscheduler, pid, 3, ptr), deny},
			{"sched_setscheduler of another, SCHED_FIFO", seccompData(a.audit, n.setscheduler, pid, 1, ptr), deny},
			{"sched_setscheduler of another, high bits of the policy set", seccompData(a.audit, n.setscheduler, pid, high|5, ptr), deny},
		}
		for name, nr := range map[string]uint32{"sched_setscheduler": n.setscheduler, "sched_setparam": n.setparam,
			"sched_setattr": n.setattr, "sched_setaffinity": n.setaffinity} {
			tests = append(tests, []struct {
				name string
				data []byte
				want int
			}{
				// 5: SCHED_IDLE for sched_setscheduler.
				{name + " of the caller", seccompData(a.audit, nr, 0, 5, ptr), allow},
				{name + " of the caller, high bits set", seccompData(a.audit, nr, high, 5, ptr), allow},
				{name + " of another", seccompData(a.audit, nr, pid, 5, ptr), deny},
				{name + " of another, high bits set", seccompData(a.audit, nr, high|pid, 5, ptr), deny},
			}...)
		}
		tests = append(tests, []struct {
			name string
			data []byte
			want int
		}{
			{"another ABI (i386 socketcall)", seccompData(0x40000003, 102, 1), kill},
			{"another ABI, an ordinary call", seccompData(0x40000028, n.read), kill},
			{"-1, a call a tracer skips", seccompData(a.audit, 0xffffffff), allow},
		}...)
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
