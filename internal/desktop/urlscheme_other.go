//go:build !windows

package desktop

// RegisterURLScheme is needed on Windows only, where a clicked toast opens
// the app's URL; other systems report clicks to the running app directly.
func RegisterURLScheme(string) error { return nil }
