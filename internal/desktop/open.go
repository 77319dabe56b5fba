package desktop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// How a target is shown: opened with its default handler, shown selected
// in its folder, or a folder opened in the file manager.
type showing int

const (
	openIt showing = iota
	revealIt
	folderIt
)

// opener returns the command that shows target as how says (Linux has no
// reveal command: see Reveal).
func opener(goos, target string, how showing) (string, []string) {
	switch goos {
	case "windows":
		switch how {
		case revealIt:
			return "explorer.exe", []string{"/select," + target}
		case folderIt:
			return "explorer.exe", []string{target}
		}
		return "rundll32", []string{"url.dll,FileProtocolHandler", target}
	case "darwin":
		if how == revealIt {
			return "open", []string{"-R", target}
		}
		return "open", []string{target}
	default:
		return "xdg-open", []string{target}
	}
}

// Open opens a URL or file with the system's default handler.
func Open(target string) error { return start(target, openIt) }

// OpenFolder opens folder dir in the system's file manager.
func OpenFolder(dir string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("open folder %s: not a folder (%v)", dir, err)
	}
	return start(dir, folderIt)
}

// Reveal shows path selected in its folder in the system's file manager:
// on Linux one that implements org.freedesktop.FileManager1. Nothing is
// opened: path may be a file a task's run made, and it or its folder may be
// something else by now (a run may swap either for a .desktop file), so on
// Linux, with no such file manager, it says where path is instead of
// handing the folder to xdg-open.
func Reveal(path string) error {
	if _, err := os.Lstat(path); err != nil {
		return fmt.Errorf("reveal %s: %w", path, err)
	}
	if revealNative(path) {
		return nil
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "darwin" {
		return fmt.Errorf("no file manager answered to show %s (org.freedesktop.FileManager1): it is in %s", filepath.Base(path), filepath.Dir(path))
	}
	return start(path, revealIt)
}

// openerWait is how long start waits to hear that the opener failed:
// xdg-open and open exit at once, non-zero, when nothing can show the
// target (no desktop, no browser), and otherwise hand it over and exit 0.
const openerWait = 2 * time.Second

// start runs the opener for target and says when it failed within
// openerWait: the button that asked is told, rather than nothing shown.
// explorer.exe's exit status says nothing (1 when it did show the file), so
// on Windows only a start that fails is an error.
func start(target string, how showing) error {
	name, args := opener(runtime.GOOS, target, how)
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
