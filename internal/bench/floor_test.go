package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
)

// DiskFloor times each write and fsync after the idle gap and leaves nothing
// behind, also when it is cancelled or cannot create its file.
func TestDiskFloor(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		dir     func(t *testing.T) string
		samples int
		wantErr bool
	}{
		{"samples", context.Background(), func(t *testing.T) string { return t.TempDir() }, 5, false},
		{"cancelled", cancelled, func(t *testing.T) string { return t.TempDir() }, 5, true},
		{"no such folder", context.Background(), func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			start := time.Now()
			res, err := bench.DiskFloor(tc.ctx, dir, tc.samples, 2*time.Millisecond)
			if (err != nil) != tc.wantErr {
				t.Fatalf("DiskFloor error = %v, want error %v", err, tc.wantErr)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("left %d files in %s", len(left), dir)
			}
			if tc.wantErr {
				return
			}
			l := res.Latency
			if l.Count != tc.samples || l.Min <= 0 || l.P99 < l.P50 || res.WriteBytes != bench.FloorWrite || res.IdleMs != 2 || res.Dir != dir {
				t.Errorf("result = %+v, want %d positive samples of %d bytes after 2 ms idle in %s", res, tc.samples, bench.FloorWrite, dir)
			}
			if took := time.Since(start); took < time.Duration(tc.samples)*2*time.Millisecond {
				t.Errorf("took %s, less than %d idle gaps of 2 ms", took, tc.samples)
			}
		})
	}
}
