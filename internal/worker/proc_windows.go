//go:build windows

package worker

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// tree is a started CLI and everything it starts: a job object holding the
// process, so the whole tree can be ended at once. When the job could not
// be set up, taskkill /T is the fallback.
type tree struct {
	pid int
	job windows.Handle
}

// prepare starts the command in its own console process group.
func prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// attach puts a started command into a new job object that ends every
// process in it when the job is closed.
func attach(cmd *exec.Cmd) (tree, error) {
	t := tree{pid: cmd.Process.Pid}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return t, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return t, err
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(t.pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return t, err
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return t, err
	}
	t.job = job
	return t, nil
}

// kill ends the whole tree at once (Windows has no gentle signal for a
// program without a console window).
func (t tree) kill(time.Duration) {
	if t.job != 0 {
		_ = windows.TerminateJobObject(t.job, 1)
	}
	taskkill(t.pid)
}

// release closes the job, which ends anything the CLI left running.
func (t tree) release() {
	if t.job != 0 {
		_ = windows.CloseHandle(t.job)
	}
}

func taskkill(pid int) {
	if pid <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, "taskkill", "/PID", strconv.Itoa(pid), "/T", "/F").Run()
}

// processAlive reports whether pid runs.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code == 259 // STILL_ACTIVE
}

// processStart is not recorded on Windows.
func processStart(int) string { return "" }

// processMatches reports whether pid is still the program image, by its
// image name in tasklist.
func processMatches(pid int, image string) bool {
	if pid <= 0 || image == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tasklist", "/FI", "PID eq "+strconv.Itoa(pid), "/FO", "CSV", "/NH").Output()
	if err != nil {
		return false
	}
	return strings.Contains(strings.ToLower(string(out)), strings.ToLower(`"`+image+`"`))
}

// killLeftover stops a process a crashed relay left running, with its tree.
func killLeftover(pid int, _ time.Duration) {
	taskkill(pid)
}

// inheritStdioOnly does nothing on Windows: a child gets only the handles
// exec.Cmd lists for it (its standard input, output and error).
func inheritStdioOnly() error { return nil }
