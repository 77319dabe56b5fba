package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// FloorWrite is what each disk-floor sample writes before its fsync: about
// what a post's commit appends to the relay's write-ahead log (a few 2 KiB
// pages with their frame headers).
const FloorWrite = 16 << 10

// floorFile is the size of the scratch file the samples write into, in
// turn, so that each write overwrites blocks already allocated, as a
// commit does in a write-ahead log that is reused after each checkpoint.
const floorFile = 1 << 20

// FloorResult is the disk floor under a wake-up: the same disk's bare
// write and fsync, with no relay involved, each after the idle gap the
// wake-up phase leaves before its post. A wake-up's commit does at least
// this much, so it cannot be faster.
type FloorResult struct {
	Dir        string  `json:"dir"`
	WriteBytes int     `json:"writeBytes"`
	IdleMs     float64 `json:"idleMs"`
	Latency    Summary `json:"latency"`
}

// DiskFloor times samples writes of FloorWrite bytes, each followed by an
// fsync, to a scratch file in dir, waiting idle before each one. The file is
// removed afterwards.
func DiskFloor(ctx context.Context, dir string, samples int, idle time.Duration) (res FloorResult, err error) {
	res = FloorResult{Dir: dir, WriteBytes: FloorWrite, IdleMs: Ms(idle)}
	f, err := os.CreateTemp(dir, "crosschat-bench-floor-")
	if err != nil {
		return res, fmt.Errorf("bench: disk floor: %w", err)
	}
	defer func() {
		err = errors.Join(err, closeRemove(f))
	}()
	// Allocate the file's blocks first, as a write-ahead log in use has them.
	if _, err := f.Write(make([]byte, floorFile)); err != nil {
		return res, fmt.Errorf("bench: disk floor: %w", err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("bench: disk floor: %w", err)
	}
	buf := make([]byte, FloorWrite)
	for i := range buf {
		buf[i] = byte(i)
	}
	lat := make([]time.Duration, 0, samples)
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for i := range samples {
		timer.Reset(idle)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return res, ctx.Err()
		}
		t0 := time.Now()
		if _, err := f.WriteAt(buf, int64(i*FloorWrite%floorFile)); err != nil {
			return res, fmt.Errorf("bench: disk floor: %w", err)
		}
		if err := f.Sync(); err != nil {
			return res, fmt.Errorf("bench: disk floor: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	res.Latency = Summarize(lat)
	return res, nil
}

func closeRemove(f *os.File) error {
	err := f.Close()
	if rmErr := os.Remove(f.Name()); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("bench: disk floor: %w", rmErr))
	}
	return err
}
