//go:build !unix

package plantguard

import "io/fs"

// fileID identifies a file; unknown here (a renamed .git is not found).
type fileID struct{}

// idOf is fi's identity: unknown.
func idOf(fs.FileInfo) fileID { return fileID{} }
