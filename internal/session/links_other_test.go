//go:build !unix

package session_test

import "testing"

// mkfifo skips the test: no FIFOs here.
func mkfifo(t *testing.T, _ string) { t.Skip("no FIFOs on this system") }

// symlink skips the test: links need a privilege here.
func symlink(t *testing.T, _, _ string) { t.Skip("no symbolic links for this test on this system") }
