//go:build linux || darwin

package desktop

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Ensure Open says when the system's opener found nothing to show the
// target with (it exits non-zero at once: no desktop, no browser), where it
// said nothing and the button that asked did nothing; an opener that hands
// the target over is no error.
func TestOpenSaysWhenNothingCouldShowIt(t *testing.T) {
	name, _ := opener(runtime.GOOS, "x", openIt)
	for _, tc := range []struct {
		script  string
		wantErr string
	}{
		{"#!/bin/sh\nexit 3\n", "could not show"},
		{"#!/bin/sh\nexit 0\n", ""},
		{"#!/bin/sh\nexec /bin/sleep 5\n", ""}, // still showing it after openerWait: taken as shown
	} {
		bin := t.TempDir()
		if err := os.WriteFile(filepath.Join(bin, name), []byte(tc.script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin)
		err := Open("http://localhost:4318/")
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%q: Open = %v, want %q", tc.script, err, tc.wantErr)
		}
	}
}
