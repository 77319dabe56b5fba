package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
			l := res.Disk
			if l.Count != tc.samples || l.Min <= 0 || l.P99 < l.P50 || res.WriteBytes != bench.FloorWrite || res.IdleMs != 2 || res.Dir != dir {
				t.Errorf("result = %+v, want %d positive samples of %d bytes after 2 ms idle in %s", res, tc.samples, bench.FloorWrite, dir)
			}
			if took := time.Since(start); took < time.Duration(tc.samples)*2*time.Millisecond {
				t.Errorf("took %s, less than %d idle gaps of 2 ms", took, tc.samples)
			}
		})
	}
}

// ServiceFloor times requests that the floor service commits one by one.
func TestServiceFloor(t *testing.T) {
	dir := t.TempDir()
	fs, err := bench.NewFloorServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	s, err := bench.ServiceFloor(context.Background(), srv.URL, 4, time.Millisecond)
	if err != nil || s.Count != 4 || s.Min <= 0 {
		t.Fatalf("ServiceFloor = %+v, %v; want 4 positive samples", s, err)
	}
	if got := fs.Commits(); got != 4 {
		t.Errorf("the service committed %d requests, want 4", got)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || fs.Commits() != 4 {
		t.Errorf("GET answered %d and committed %d in all; want 405 and 4", resp.StatusCode, fs.Commits())
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left %d files in %s", len(left), dir)
	}
	// A service that cannot commit answers an error, which ends the floor.
	if _, err := bench.ServiceFloor(context.Background(), srv.URL, 1, time.Millisecond); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("ServiceFloor after Close = %v, want an HTTP 500 error", err)
	}
}
