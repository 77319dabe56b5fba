package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/client"
)

// The floor under a wake-up. A wake-up is a request that commits once (the
// post's write, with its fsync) and answers, after an idle gap. Two
// measurements with no relay involved show what the machine alone needs for
// that: the disk's bare write and fsync (DiskFloor), and a do-nothing Go HTTP
// service in a process of its own that does the same write and fsync for
// each request (FloorServer, timed by ServiceFloor).

// FloorWrite is what each floor sample writes before its fsync: about what a
// post's commit appends to the relay's write-ahead log (a few 2 KiB pages
// with their frame headers).
const FloorWrite = 16 << 10

// floorFile is the size of the scratch file the samples write into, in
// turn, so that each write overwrites blocks already allocated, as a commit
// does in a write-ahead log that is reused after each checkpoint.
const floorFile = 1 << 20

// FloorResult is the floor under the wake-up phase, each sample after the
// idle gap that phase leaves before its post.
type FloorResult struct {
	Dir        string  `json:"dir"`
	WriteBytes int     `json:"writeBytes"`
	IdleMs     float64 `json:"idleMs"`
	// Disk is the bare write and fsync, in the bench's process.
	Disk Summary `json:"disk"`
	// Service is a request to a do-nothing HTTP service in a process of its
	// own that writes and fsyncs as Disk does before it answers (nil when
	// the bench ran none).
	Service *Summary `json:"service,omitempty"`
}

// floorScratch is the scratch file of a floor: made in dir with its blocks
// allocated, written FloorWrite bytes at a time in turn.
type floorScratch struct {
	f   *os.File
	buf []byte
	n   int
}

func newFloorScratch(dir string) (*floorScratch, error) {
	f, err := os.CreateTemp(dir, "crosschat-bench-floor-")
	if err != nil {
		return nil, fmt.Errorf("bench: floor: %w", err)
	}
	s := &floorScratch{f: f, buf: make([]byte, FloorWrite)}
	for i := range s.buf {
		s.buf[i] = byte(i)
	}
	if _, err := f.Write(make([]byte, floorFile)); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: floor: %w", err), s.Close())
	}
	if err := f.Sync(); err != nil {
		return nil, errors.Join(fmt.Errorf("bench: floor: %w", err), s.Close())
	}
	return s, nil
}

// commit writes the next FloorWrite bytes and fsyncs them.
func (s *floorScratch) commit() error {
	off := int64(s.n * FloorWrite % floorFile)
	s.n++
	if _, err := s.f.WriteAt(s.buf, off); err != nil {
		return fmt.Errorf("bench: floor: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("bench: floor: %w", err)
	}
	return nil
}

// Close closes and removes the file.
func (s *floorScratch) Close() error {
	err := s.f.Close()
	if rmErr := os.Remove(s.f.Name()); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("bench: floor: %w", rmErr))
	}
	return err
}

// idleSamples runs op samples times, each after idle, and times it.
func idleSamples(ctx context.Context, samples int, idle time.Duration, op func() error) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, samples)
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for range samples {
		timer.Reset(idle)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t0 := time.Now()
		if err := op(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// DiskFloor times samples writes of FloorWrite bytes, each followed by an
// fsync, to a scratch file in dir, waiting idle before each one. The file is
// removed afterwards.
func DiskFloor(ctx context.Context, dir string, samples int, idle time.Duration) (res FloorResult, err error) {
	res = FloorResult{Dir: dir, WriteBytes: FloorWrite, IdleMs: Ms(idle)}
	s, err := newFloorScratch(dir)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	lat, err := idleSamples(ctx, samples, idle, s.commit)
	if err != nil {
		return res, err
	}
	res.Disk = Summarize(lat)
	return res, nil
}

// FloorServer is the do-nothing service of the floor: each POST writes
// FloorWrite bytes to a scratch file and fsyncs them before it answers.
type FloorServer struct {
	mu      sync.Mutex
	s       *floorScratch
	commits int
}

// NewFloorServer makes a FloorServer with its scratch file in dir; Close
// removes the file.
func NewFloorServer(dir string) (*FloorServer, error) {
	s, err := newFloorScratch(dir)
	if err != nil {
		return nil, err
	}
	return &FloorServer{s: s}, nil
}

// ServeHTTP commits and answers a small JSON body.
func (fs *FloorServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fs.mu.Lock()
	err := fs.s.commit()
	if err == nil {
		fs.commits++
	}
	fs.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"committed":true}`)
}

// Commits is how many requests were committed.
func (fs *FloorServer) Commits() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.commits
}

// Close removes the scratch file.
func (fs *FloorServer) Close() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.s.Close()
}

// ServiceFloor times samples POSTs to a FloorServer at url (its base, as
// http://host:port) over one keep-alive connection, each after idle, sent
// as the bench sends tool calls (conn.go).
func ServiceFloor(ctx context.Context, url string, samples int, idle time.Duration) (Summary, error) {
	p, err := newConnPool(strings.TrimRight(url, "/"), 1)
	if err != nil {
		return Summary{}, err
	}
	defer p.close()
	lat, err := idleSamples(ctx, samples, idle, func() error {
		a, err := p.post(ctx, "/", "Content-Type: application/json\r\n", []byte(`{}`))
		if err != nil {
			return fmt.Errorf("bench: floor service: %w", err)
		}
		if a.status != http.StatusOK {
			return fmt.Errorf("bench: floor service: HTTP %d: %s", a.status, client.Snippet(a.body))
		}
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	return Summarize(lat), nil
}

// floor measures the floor under the wake-up phase, with its samples and
// idle gap.
func (r *runner) floor(ctx context.Context) (FloorResult, error) {
	o := r.o
	r.pr.linef("bench: floor: %d writes of %d KiB + fsync in %s, each after %s idle", o.WakeSamples, FloorWrite>>10, o.FloorDir, o.WakeSettle)
	f, err := DiskFloor(ctx, o.FloorDir, o.WakeSamples, o.WakeSettle)
	if err != nil {
		return f, err
	}
	r.pr.linef("bench: floor: disk p50 %s, p99 %s", fmtDur(f.Disk.P50), fmtDur(f.Disk.P99))
	if o.FloorURL == "" {
		return f, nil
	}
	s, err := ServiceFloor(ctx, o.FloorURL, o.WakeSamples, o.WakeSettle)
	if err != nil {
		return f, err
	}
	r.pr.linef("bench: floor: a request that commits so, to a do-nothing Go service: p50 %s, p99 %s", fmtDur(s.P50), fmtDur(s.P99))
	f.Service = &s
	return f, nil
}
