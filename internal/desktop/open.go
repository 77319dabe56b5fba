package desktop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// opener returns the command that opens target with the system's default
// handler, or reveals it in the file manager when reveal is set.
func opener(goos, target string, reveal bool) (string, []string) {
	switch goos {
	case "windows":
		if reveal {
			return "explorer.exe", []string{"/select," + target}
		}
		return "rundll32", []string{"url.dll,FileProtocolHandler", target}
	case "darwin":
		if reveal {
			return "open", []string{"-R", target}
		}
		return "open", []string{target}
	default:
		if reveal {
			// No file manager answered org.freedesktop.FileManager1: open the folder.
			if st, err := os.Stat(target); err == nil && !st.IsDir() {
				target = filepath.Dir(target)
			}
		}
		return "xdg-open", []string{target}
	}
}

// Open opens a URL or file with the system's default handler.
func Open(target string) error { return start(target, false) }

// Reveal shows a file or folder in the system's file manager; on Linux a
// file is selected where the file manager implements org.freedesktop.FileManager1.
func Reveal(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("reveal %s: %w", path, err)
	}
	if !st.IsDir() && revealNative(path) {
		return nil
	}
	return start(path, true)
}

// openerWait is how long start waits to hear that the opener failed:
// xdg-open and open exit at once, non-zero, when nothing can show the
// target (no desktop, no browser), and otherwise hand it over and exit 0.
const openerWait = 2 * time.Second

// start runs the opener for target and says when it failed within
// openerWait: the button that asked is told, rather than nothing shown.
// explorer.exe's exit status says nothing (1 when it did show the file), so
// on Windows only a start that fails is an error.
func start(target string, reveal bool) error {
	name, args := opener(runtime.GOOS, target, reveal)
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if runtime.GOOS == "windows" {
		return nil
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s could not show %s (%v): is a desktop session running on this computer?", name, target, err)
		}
	case <-time.After(openerWait):
	}
	return nil
}
