//go:build linux

package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure Show in folder says why nothing was shown (no desktop: xdg-open
// exits non-zero at once) in words the dashboard shows, where it said
// nothing and the button did nothing.
func TestShowInFolderSaysWhyNothingShowed(t *testing.T) {
	r := startRelay(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	err := r.Services.System.RevealDataFolder()
	if relay.ErrorCode(err) != relay.EInternal || !strings.Contains(relay.ErrorMessage(err), "could not show") {
		t.Fatalf("RevealDataFolder with no desktop: %v; want the opener's words", err)
	}
}
