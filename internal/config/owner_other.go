//go:build !windows

package config

// restrictToOwner: the 0700 mode EnsureDataDir sets is the whole rule here.
func restrictToOwner(string) error { return nil }
