//go:build unix

package sandbox

import (
	"os"
	"syscall"
)

// privateDir reports whether path is a real folder (not a symbolic link)
// owned by uid with mode 0700.
func privateDir(path string, uid int) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// syscallNoFollow makes an open fail on a symbolic link.
const syscallNoFollow = syscall.O_NOFOLLOW
