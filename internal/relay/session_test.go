package relay_test

import (
	"slices"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensures an any-session worker's folders are its working and extra
// folders and its read-write allowed paths (realdir checks a session
// folder against them).
func TestSessionFolders(t *testing.T) {
	c := relay.WorkerConfig{Workdir: "/src/app", ExtraDirs: []string{"/src/lib"}, AllowPaths: []string{"/data:rw", "/docs", "/ro:ro"}}
	if got, want := c.SessionFolders(), []string{"/src/app", "/src/lib", "/data"}; !slices.Equal(got, want) {
		t.Errorf("SessionFolders() = %q, want %q", got, want)
	}
}
