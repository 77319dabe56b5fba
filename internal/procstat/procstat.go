// Package procstat reads what Linux's /proc/PID/stat tells of a process:
// its parent, process group, state and start time. The worker checks its
// runs' processes with it and the sandbox's reaper walks a run's tree.
package procstat

import (
	"bytes"
	"os"
	"strconv"
)

// Dir is where Linux lists its processes.
const Dir = "/proc"

// Stat is what /proc/PID/stat tells of a process. Start (clock ticks
// after boot) with PID tells it from a later process given the same id.
type Stat struct {
	PID, PPID, PGID int
	State           byte
	Start           uint64
}

// Zombie reports whether the process has ended and waits to be reaped (or
// is being).
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads dir/PID/stat (dir is Dir but in tests); false when the
// process is gone or the file cannot be read as one.
func Read(dir string, pid int) (Stat, bool) {
	b, err := os.ReadFile(dir + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, false
	}
	// The command name (field 2) is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	// From field 3: state, ppid, pgrp, … starttime (field 22).
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, false
	}
	return Stat{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0], Start: start}, true
}
