//go:build unix

package realdir

import (
	"os"
	"syscall"
)

// ownedByUser reports whether the file belongs to this process's user.
func ownedByUser(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
