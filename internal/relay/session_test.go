//go:build unix

package relay_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensures an any-session worker's folders are its working and extra
// folders and its read-write allowed paths, and a session folder counts
// when it is one of them or below one.
func TestSessionFolders(t *testing.T) {
	c := relay.WorkerConfig{Workdir: "/src/app", ExtraDirs: []string{"/src/lib"}, AllowPaths: []string{"/data:rw", "/docs", "/ro:ro"}}
	roots := c.SessionFolders()
	for _, tc := range []struct {
		folder string
		want   bool
	}{
		{"/src/app", true},
		{"/src/app/cmd", true},
		{"/src/lib/", true},
		{"/data/x", true},
		{"/docs", false},
		{"/ro", false},
		{"/src/application", false},
		{"/src", false},
		{"/src/app/../other", false},
		{"src/app", false},
		{"", false},
	} {
		if got := relay.FolderWithin(tc.folder, roots); got != tc.want {
			t.Errorf("FolderWithin(%q, %q) = %v, want %v", tc.folder, roots, got, tc.want)
		}
	}
}
