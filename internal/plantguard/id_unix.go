//go:build unix

package plantguard

import (
	"io/fs"
	"syscall"
)

// fileID identifies a file on its device.
type fileID struct{ dev, ino uint64 }

// idOf is fi's identity (zero where unknown).
func idOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: st.Ino}
	}
	return fileID{}
}
