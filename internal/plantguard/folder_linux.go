package plantguard

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
)

// folderID is the identity of the folder at the absolute path, opened one
// component at a time following no link: an error when a component is a
// link (or not a folder).
func folderID(path string) (fileID, error) {
	fd, err := syscall.Open("/", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fileID{}, err
	}
	for _, name := range strings.Split(strings.Trim(filepath.Clean(path), "/"), "/") {
		if name == "" {
			continue
		}
		next, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		syscall.Close(fd)
		if err != nil {
			return fileID{}, fmt.Errorf("%s is a link, lies under one, or is not a folder: %w", path, err)
		}
		fd = next
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, nil
}
