//go:build !linux

package desktop

// revealNative is Linux-only; other systems' reveal commands select the file.
func revealNative(string) bool { return false }
