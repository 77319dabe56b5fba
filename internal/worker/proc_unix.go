//go:build unix

package worker

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// tree is a started CLI and everything it starts: its own process group.
type tree struct {
	pgid int
}

// prepare makes the command lead a new session, and so a new process group
// (its id is the CLI's pid), so its whole tree can be signalled at once;
// the new session has no controlling terminal, so the run cannot reach the
// relay's terminal (TIOCSTI on /dev/tty would type into the user's shell).
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// attach returns the tree of a started command.
func attach(cmd *exec.Cmd) (tree, error) {
	return tree{pgid: cmd.Process.Pid}, nil
}

// kill stops the whole tree: SIGTERM to the group, then SIGKILL to whatever
// is still alive after grace.
func (t tree) kill(grace time.Duration) {
	if t.pgid <= 0 || !groupAlive(t.pgid) {
		return
	}
	_ = syscall.Kill(-t.pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for groupAlive(t.pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-t.pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// release frees what the tree holds (nothing on Unix).
func (t tree) release() {}

// groupAlive reports whether a process group still has a live (not zombie)
// member.
func groupAlive(pgid int) bool {
	if runtime.GOOS == "linux" {
		if alive, ok := linuxGroupAlive(pgid); ok {
			return alive
		}
	}
	return syscall.Kill(-pgid, 0) == nil
}

// linuxStat returns the state and process group of pid from /proc.
func linuxStat(pid string) (state byte, pgid int, start string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 {
		return 0, 0, "", false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, 0, "", false
	}
	return f[0][0], g, f[19], true
}

func linuxGroupAlive(pgid int) (alive, ok bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false, false
	}
	for _, e := range entries {
		name := e.Name()
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		state, g, _, ok := linuxStat(name)
		if ok && g == pgid && state != 'Z' && state != 'X' {
			return true, true
		}
	}
	return false, true
}

// processAlive reports whether pid runs (a zombie counts as gone).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if runtime.GOOS == "linux" {
		state, _, _, ok := linuxStat(strconv.Itoa(pid))
		return ok && state != 'Z' && state != 'X'
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processStart identifies when pid started, so a recycled pid is not taken
// for the recorded process; "" where unknown.
func processStart(pid int) string {
	if runtime.GOOS != "linux" {
		// macOS and the BSDs have no /proc: ask ps, so a leftover is
		// matched by its start time as well as its name.
		return psStart(pid)
	}
	_, _, start, ok := linuxStat(strconv.Itoa(pid))
	if !ok {
		return ""
	}
	return start
}

// psStart is when pid started as ps tells it (lstart, to the second, in
// the C locale), or "" when it does not run or ps cannot tell.
func psStart(pid int) string {
	if pid <= 0 {
		return ""
	}
	cmd := exec.Command("ps", "-o", "lstart=", "-p", strconv.Itoa(pid))
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(out)), " ")
}

// processMatches reports whether pid is still the program image: any word of
// its command line (or its executable) has that base name. A zombie has no
// command line and never matches.
func processMatches(pid int, image string) bool {
	if pid <= 0 || image == "" {
		return false
	}
	var words []string
	if runtime.GOOS == "linux" {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			return false
		}
		words = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
			words = append(words, strings.TrimSuffix(exe, " (deleted)"))
		}
	} else {
		out, err := exec.Command("ps", "-p", strconv.Itoa(pid), "-o", "args=").Output()
		if err != nil {
			return false
		}
		words = strings.Fields(string(out))
	}
	for _, w := range words {
		if w != "" && filepath.Base(w) == image {
			return true
		}
	}
	return false
}

// killLeftover stops a process a crashed relay left running, with its
// group when it leads one.
func killLeftover(pid int, grace time.Duration) {
	if g, err := syscall.Getpgid(pid); err == nil && g == pid {
		tree{pgid: pid}.kill(grace)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}
