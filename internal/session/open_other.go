//go:build !unix

package session

// openFlags are the plain read flags where Unix's are missing.
const openFlags = 0
