package plantguard_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/plantguard"
)

// Ensure a snapshot taken while another run is under way in an
// overlapping folder (the same, one holding it, one inside it) keeps the
// state before both: what the first run planted is undone by the first
// restore and not put back by the second, in whichever order they end; a
// settings file the user had stays as it was.
func TestInheritKeepsTheStateBeforeBoth(t *testing.T) {
	for _, tc := range []struct {
		name         string
		first, later string // the runs' folders, under the project
		plant        string // what the first run plants, under the project
		laterFirst   bool   // the later run ends first
	}{
		{"same folder", ".", ".", ".git/hooks/post-checkout", false},
		{"later inside", ".", "sub", "sub/.claude/settings.json", false},
		{"later holds", "sub", ".", "sub/.mcp.json", false},
		{"later ends first", ".", "sub", "sub/.claude/settings.json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t)
			write(t, filepath.Join(dir, "sub", ".claude", "settings.json"), "mine")
			first, err := plantguard.Take(filepath.Join(dir, tc.first))
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, tc.plant), "planted")
			later, err := plantguard.Take(filepath.Join(dir, tc.later))
			if err != nil {
				t.Fatal(err)
			}
			later.Inherit(first)
			order := []*plantguard.Snapshot{first, later}
			if tc.laterFirst {
				order = []*plantguard.Snapshot{later, first}
			}
			for _, s := range order {
				if _, _, err := s.Restore(); err != nil {
					t.Fatalf("restore %s: %v", s.Folder(), err)
				}
			}
			got := read(filepath.Join(dir, tc.plant))
			if tc.plant == "sub/.claude/settings.json" {
				if got != "mine" {
					t.Errorf("the user's settings: %q", got)
				}
			} else if _, err := os.Lstat(filepath.Join(dir, tc.plant)); err == nil {
				t.Errorf("%s is back", tc.plant)
			}
			if read(filepath.Join(dir, "sub", ".claude", "settings.json")) != "mine" {
				t.Error("the user's settings changed")
			}
		})
	}
}
