//go:build unix

package worker

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crosschat/crosschat-relay/internal/procstat"
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

func linuxGroupAlive(pgid int) (alive, ok bool) {
	entries, err := os.ReadDir(procstat.Dir)
	if err != nil {
		return false, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := procstat.Read(procstat.Dir, pid); ok && p.PGID == pgid && !p.Zombie() {
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
		p, ok := procstat.Read(procstat.Dir, pid)
		return ok && !p.Zombie()
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
	p, ok := procstat.Read(procstat.Dir, pid)
	if !ok {
		return ""
	}
	return strconv.FormatUint(p.Start, 10)
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
