package desktop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

func start(target string, reveal bool) error {
	name, args := opener(runtime.GOOS, target, reveal)
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run %s: %w", name, err)
	}
	go cmd.Wait() //nolint:errcheck // the opener's exit status says nothing useful
	return nil
}
