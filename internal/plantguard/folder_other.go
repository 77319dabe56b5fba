//go:build !linux

package plantguard

import (
	"fmt"
	"os"
)

// folderID is the identity of the folder at path: an error when it is a
// link or not a folder (the folders above it are not checked here).
func folderID(path string) (fileID, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileID{}, err
	}
	if !fi.IsDir() {
		return fileID{}, fmt.Errorf("%s is a link, or not a folder", path)
	}
	return idOf(fi), nil
}
