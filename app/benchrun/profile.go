package benchrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
)

// `bench --cpuprofile DIR` records each child relay's CPU profile over the
// lifecycle phase, one file per run in DIR, for `go tool pprof`, and its
// allocations at the phase's start and end beside it (FILE.allocs-start and
// FILE.allocs: `go tool pprof -sample_index=alloc_space -diff_base
// FILE.allocs-start FILE.allocs` shows what the phase allocated). The parent
// passes the file to the child (`--cpuprofile FILE` after `--relay-child`)
// and asks it to start and stop recording over stdin, beside the samples.
// Nothing is recorded unless asked: the relay serves no profile anywhere.

// Requests the bench parent sends a profiling child relay, answered "ok".
const (
	profileStart = "cpuprofile start"
	profileStop  = "cpuprofile stop"
)

// profileFile is the profile's file for one child relay: label "data
// folder" or "tmpfs", round from 1.
func profileFile(dir, label string, round int) string {
	kind := "disk"
	if label == "tmpfs" {
		kind = "tmpfs"
	}
	return filepath.Join(dir, fmt.Sprintf("relay-%s-%d.pprof", kind, round))
}

// childProfiler is the parent's side: it implements bench.Profiler over
// the child relay's stdin and stdout.
type childProfiler struct{ p *childProbe }

// StartCPUProfile implements bench.Profiler.
func (c childProfiler) StartCPUProfile(context.Context) error { return c.p.say(profileStart) }

// StopCPUProfile implements bench.Profiler.
func (c childProfiler) StopCPUProfile(context.Context) error { return c.p.say(profileStop) }

// say sends the child a request it answers with "ok" or an error line.
func (p *childProbe) say(request string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.in, request+"\n"); err != nil {
		return fmt.Errorf("child relay: %s: %w", request, err)
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("child relay: %s: %w", request, err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return fmt.Errorf("child relay: %s: %s", request, line)
	}
	return nil
}

// cpuProfile is the child's side: the file it was given (empty: no
// profiling asked for) and, while recording, the open file.
type cpuProfile struct {
	path string
	f    *os.File
}

// handle runs a profile request; ok says whether request was one.
func (c *cpuProfile) handle(request string) (ok bool, err error) {
	switch request {
	case profileStart:
		if c.path == "" {
			return true, errors.New("no --cpuprofile file given")
		}
		if c.f != nil {
			return true, errors.New("already recording")
		}
		f, err := os.Create(c.path)
		if err != nil {
			return true, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return true, errors.Join(fmt.Errorf("cpu profile: %w", err), f.Close())
		}
		c.f = f
		return true, writeAllocs(c.path + ".allocs-start")
	case profileStop:
		return true, c.stop()
	}
	return false, nil
}

// stop ends a recording, if one runs, and closes its file.
func (c *cpuProfile) stop() error {
	if c.f == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := c.f.Close()
	c.f = nil
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	return writeAllocs(c.path + ".allocs")
}

// writeAllocs writes the allocations profile (every allocation sampled so
// far) to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("allocations profile: %w", err)
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cErr := f.Close(); err == nil && cErr != nil {
		err = cErr
	}
	if err != nil {
		return fmt.Errorf("allocations profile: %w", err)
	}
	return nil
}
