package watch_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/watch"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, limits watch.Limits, dirs ...string) watch.Snap {
	t.Helper()
	s, err := watch.Snapshot(context.Background(), dirs, limits)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

// Ensures regular files are recorded, ignored folders and symlinks skipped,
// and missing folders are empty.
func TestSnapshot(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.txt"), "a")
	write(t, filepath.Join(dir, "sub", "b.txt"), "bb")
	for _, ign := range []string{".git", "node_modules", "target", "__pycache__", ".venv"} {
		write(t, filepath.Join(dir, ign, "x"), "x")
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.txt"), "s")
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "file-link")); err != nil {
		t.Fatal(err)
	}
	s := snapshot(t, watch.Limits{}, dir, filepath.Join(dir, "missing"))
	var got []string
	for p := range s.Files {
		got = append(got, p)
	}
	sort.Strings(got)
	want := []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "b.txt")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %v, want %v", got, want)
	}
	if !s.Complete {
		t.Fatal("snapshot incomplete")
	}
	if s.Files[want[1]].Size != 2 {
		t.Fatalf("size = %d", s.Files[want[1]].Size)
	}
}

// Ensures the file limit marks the snapshot incomplete, and a cancelled
// context returns its error.
func TestSnapshotLimits(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		write(t, filepath.Join(dir, "d", string(rune('a'+i))), "x")
	}
	s := snapshot(t, watch.Limits{MaxFiles: 3}, dir)
	if s.Complete || len(s.Files) != 3 {
		t.Fatalf("complete=%v files=%d, want incomplete with 3", s.Complete, len(s.Files))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := watch.Snapshot(ctx, []string{dir}, watch.Limits{})
	if err == nil || s.Complete {
		t.Fatalf("cancelled: err=%v complete=%v", err, s.Complete)
	}
	if _, err := watch.Snapshot(context.Background(), []string{filepath.Join(dir, "d", "a")}, watch.Limits{}); err == nil {
		t.Fatal("a file as a folder: no error")
	}
}

func TestDiff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fi := func(size int64, sec int) watch.FileInfo {
		return watch.FileInfo{Size: size, ModTime: t0.Add(time.Duration(sec) * time.Second)}
	}
	tests := []struct {
		name          string
		before, after watch.Snap
		want          []relay.ChangedFile
	}{
		{
			name:   "added changed deleted newest first",
			before: watch.Snap{Complete: true, Files: map[string]watch.FileInfo{"/k": fi(1, 1), "/c": fi(1, 1), "/d": fi(5, 0), "/m": fi(1, 1)}},
			after:  watch.Snap{Complete: true, Files: map[string]watch.FileInfo{"/k": fi(1, 1), "/c": fi(2, 3), "/a": fi(7, 5), "/m": fi(1, 2)}},
			want: []relay.ChangedFile{
				{Path: "/a", Change: relay.FileAdded, Size: 7},
				{Path: "/c", Change: relay.FileChanged, Size: 2},
				{Path: "/m", Change: relay.FileChanged, Size: 1},
				{Path: "/d", Change: relay.FileDeleted},
			},
		},
		{
			name:   "no deletions when before is incomplete",
			before: watch.Snap{Complete: false, Files: map[string]watch.FileInfo{"/d": fi(5, 0)}},
			after:  watch.Snap{Complete: true, Files: map[string]watch.FileInfo{}},
		},
		{
			name:   "no deletions when after is incomplete",
			before: watch.Snap{Complete: true, Files: map[string]watch.FileInfo{"/d": fi(5, 0)}},
			after:  watch.Snap{Complete: false, Files: map[string]watch.FileInfo{"/a": fi(1, 1)}},
			want:   []relay.ChangedFile{{Path: "/a", Change: relay.FileAdded, Size: 1}},
		},
		{
			name:   "nothing",
			before: watch.Snap{Complete: true, Files: map[string]watch.FileInfo{"/k": fi(1, 1)}},
			after:  watch.Snap{Complete: true, Files: map[string]watch.FileInfo{"/k": fi(1, 1)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := watch.Diff(tt.before, tt.after)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Diff = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Ensures the list is capped.
func TestDiffCap(t *testing.T) {
	after := watch.Snap{Complete: true, Files: map[string]watch.FileInfo{}}
	for i := range 700 {
		after.Files[filepath.Join("/x", string(rune(0x4e00+i)))] = watch.FileInfo{Size: 1}
	}
	if got := watch.Diff(watch.Snap{Complete: true}, after); len(got) != watch.MaxChanges {
		t.Fatalf("len = %d, want %d", len(got), watch.MaxChanges)
	}
}

func waitTouched(t *testing.T, w *watch.Watcher) []watch.Touch {
	t.Helper()
	touched, complete := w.Touched()
	if !complete {
		t.Fatal("watcher reported an incomplete set")
	}
	return touched
}

func hasTouch(ts []watch.Touch, p string, op watch.Op) bool {
	for _, t := range ts {
		if t.Path == p && t.Op == op {
			return true
		}
	}
	return false
}

// Ensures the watcher sees files created in existing and new folders,
// writes and removals, and ignores node_modules.
func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "old.txt"), "old")
	write(t, filepath.Join(dir, "gone.txt"), "gone")
	w, err := watch.NewWatcher([]string{dir, filepath.Join(dir, "missing")}, watch.Limits{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "new.txt"), "n")
	write(t, filepath.Join(dir, "old.txt"), "changed")
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "deep", "er", "made.txt"), "m")
	write(t, filepath.Join(dir, "node_modules", "pkg.js"), "x")
	// Events arrive asynchronously and in order: a sentinel written last
	// marks the end.
	sentinel := filepath.Join(dir, "deep", "er", "zz-sentinel")
	write(t, sentinel, "s")
	deadline := time.Now().Add(10 * time.Second)
	for !w.Seen(sentinel) {
		if time.Now().After(deadline) {
			t.Fatal("sentinel never seen")
		}
		time.Sleep(10 * time.Millisecond)
	}
	touched := waitTouched(t, w)
	for _, c := range []struct {
		name string
		op   watch.Op
	}{
		{"new.txt", watch.OpCreate},
		{"old.txt", watch.OpWrite},
		{"gone.txt", watch.OpRemove},
		{filepath.Join("deep", "er", "made.txt"), watch.OpCreate},
	} {
		if !hasTouch(touched, filepath.Join(dir, c.name), c.op) {
			t.Errorf("missing %s op %d in %+v", c.name, c.op, touched)
		}
	}
	for _, tc := range touched {
		if filepath.Base(filepath.Dir(tc.Path)) == "node_modules" {
			t.Errorf("ignored path recorded: %s", tc.Path)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Ensures Changes fills in from the touched paths when a snapshot is
// incomplete, and ignores them when both are complete.
func TestChanges(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.txt")
	write(t, kept, "k")
	before := snapshot(t, watch.Limits{}, dir)
	before.Complete = false // pretend the walk hit its limit
	added := filepath.Join(dir, "added.txt")
	write(t, added, "aa")
	temp := filepath.Join(dir, "temp.txt")
	after := watch.Snap{Files: map[string]watch.FileInfo{}, Complete: false} // saw nothing
	touched := []watch.Touch{
		{Path: added, Op: watch.OpCreate}, {Path: added, Op: watch.OpWrite},
		{Path: temp, Op: watch.OpCreate}, {Path: temp, Op: watch.OpRemove},
		{Path: kept, Op: watch.OpWrite}, // written back unchanged
		{Path: "relative", Op: watch.OpCreate},
	}
	got := watch.Changes(before, after, touched)
	want := []relay.ChangedFile{{Path: added, Change: relay.FileAdded, Size: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Changes = %+v, want %+v", got, want)
	}
	before.Complete, after = true, snapshot(t, watch.Limits{}, dir)
	if err := os.Remove(kept); err != nil {
		t.Fatal(err)
	}
	got = watch.Changes(before, after, []watch.Touch{{Path: kept, Op: watch.OpRemove}})
	want = []relay.ChangedFile{{Path: added, Change: relay.FileAdded, Size: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("complete: Changes = %+v, want %+v", got, want)
	}
}

// Ensures a Tracker lists what a run made, from the snapshots when they are
// complete and with the watcher and the CLI's own report when they are not.
func TestTracker(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	end := watch.Tracker{}.Begin(ctx, []string{dir})
	made := filepath.Join(dir, "made.txt")
	write(t, made, "m")
	want := []relay.ChangedFile{{Path: made, Change: relay.FileAdded, Size: 1}}
	if got := end(ctx, []relay.ChangedFile{{Path: filepath.Join(dir, "claimed.txt"), Change: relay.FileAdded}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("complete: %+v, want %+v", got, want)
	}

	big := t.TempDir()
	for i := range 5 {
		write(t, filepath.Join(big, "old", string(rune('a'+i))), "x")
	}
	end = watch.Tracker{Limits: watch.Limits{MaxFiles: 2}}.Begin(ctx, []string{big})
	reported := filepath.Join(big, "old", "a")
	write(t, reported, "changed by the run")
	got := end(ctx, []relay.ChangedFile{{Path: reported, Change: relay.FileChanged}})
	var found bool
	for _, f := range got {
		found = found || (f.Path == reported && f.Change == relay.FileChanged)
	}
	if !found {
		t.Fatalf("incomplete: %+v lacks %s", got, reported)
	}
}
