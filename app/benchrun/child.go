package benchrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// The bench runs each relay it measures as a child process of its own
// (`bench --relay-child DIR`), so the CPU time and memory it reports are
// the relay's alone. The child prints "ready <url> <admin token>" once it
// answers /health, then answers each "sample" line on stdin with a JSON
// bench.Sample line ("settled": the same, after a garbage collection that
// returns free memory to the OS); at the end of stdin it shuts down.

// benchRun is one measured relay in the combined report.
type benchRun struct {
	Label string `json:"label"`
	// Round is the run's round, from 1, when the bench ran several.
	Round   int           `json:"round,omitempty"`
	Folder  string        `json:"folder"`
	Report  *bench.Report `json:"report"`
	Comment string        `json:"comment,omitempty"`
}

// benchSummary is the JSON of a run over several data folders.
type benchSummary struct {
	Runs []benchRun `json:"runs"`
	// DiskToTmpfs is the data folder's lifecycles/s over tmpfs's (with
	// several rounds, the median of each round's ratio).
	DiskToTmpfs float64 `json:"diskToTmpfs,omitempty"`
	// Medians are the figures' medians over the rounds, when there were
	// several.
	Medians *bench.Rounds `json:"medians,omitempty"`
}

// DefaultTmpfs is /dev/shm when it exists, else "": the default of
// Options.Tmpfs.
func DefaultTmpfs() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return ""
}

// benchChildren measures a child relay in dataParent, then one in tmpfs,
// rounds times over. The parked claims are measured in every round, on the
// data folder; the long queues once, in the first.
// With profileDir set, each child relay records its CPU profile over the
// lifecycle phase into a file there (profileFile).
func benchChildren(ctx context.Context, o bench.Options, dataParent, tmpfs string, rounds int, profileDir string, jsonOut bool, stdout, stderr io.Writer) error {
	folder := dataParent
	if folder == "" {
		folder = os.TempDir()
	}
	type target struct{ label, folder string }
	targets := []target{{"data folder", folder}}
	if tmpfs != "" {
		targets = append(targets, target{"tmpfs", tmpfs})
	}
	var (
		sum       benchSummary
		disk, shm []*bench.Report // each round's report on the data folder, on tmpfs
	)
	for round := 1; round <= rounds; round++ {
		for i, t := range targets {
			oo := o
			if i > 0 {
				// The crowd and the long queues are measured on the disk.
				oo.Waiters, oo.QueueSizes = -1, []int{}
			}
			if round > 1 {
				oo.QueueSizes = []int{}
			}
			where := t.label + ": " + t.folder
			if rounds > 1 {
				where = fmt.Sprintf("round %d of %d, %s", round, rounds, where)
			}
			fmt.Fprintf(stderr, "bench: === %s ===\n", where)
			profile := ""
			if profileDir != "" {
				profile = profileFile(profileDir, t.label, round)
			}
			rep, err := benchInChild(ctx, oo, t.folder, profile, stderr)
			if err != nil {
				return fmt.Errorf("bench (%s): %w", where, err)
			}
			run := benchRun{Label: t.label, Folder: t.folder, Report: rep}
			if rounds > 1 {
				run.Round = round
			}
			sum.Runs = append(sum.Runs, run)
			if i == 0 {
				disk = append(disk, rep)
			} else {
				shm = append(shm, rep)
			}
		}
	}
	medians := bench.SummarizeRounds(disk, shm)
	if medians.DiskToTmpfs != nil {
		sum.DiskToTmpfs = medians.DiskToTmpfs.Median
	}
	if rounds > 1 {
		sum.Medians = &medians
	}
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return fmt.Errorf("bench: write report: %w", err)
		}
		return nil
	}
	for _, r := range sum.Runs {
		head := r.Label + ": " + r.Folder
		if r.Round > 0 {
			head = fmt.Sprintf("round %d, %s", r.Round, head)
		}
		if _, err := fmt.Fprintf(stdout, "=== %s ===\n", head); err != nil {
			return fmt.Errorf("bench: write report: %w", err)
		}
		if err := r.Report.WriteText(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	if sum.Medians != nil {
		return sum.Medians.WriteText(stdout)
	}
	if len(sum.Runs) == 2 {
		d, t := sum.Runs[0].Report, sum.Runs[1].Report
		fmt.Fprintf(stdout, "Summary: %.0f lifecycles/s on the data folder, %.0f on tmpfs: %.0f%% of tmpfs\n",
			d.Lifecycle.LifecyclesPerSec, t.Lifecycle.LifecyclesPerSec, 100*sum.DiskToTmpfs)
		if d.Relay != nil && t.Relay != nil {
			fmt.Fprintf(stdout, "  relay CPU per tool call %.3f ms (data folder), %.3f ms (tmpfs); fsyncs per lifecycle %.2f / %.2f\n",
				d.Relay.CPUPerCallMs, t.Relay.CPUPerCallMs, d.Relay.FsyncsPerLifecycle, t.Relay.FsyncsPerLifecycle)
			fmt.Fprintf(stdout, "  the store's writer busy %.0f%% / %.0f%% of the lifecycle phase, in COMMIT %.0f%% / %.0f%%\n",
				100*d.Relay.WriterBusy, 100*t.Relay.WriterBusy, 100*d.Relay.WriterCommitting, 100*t.Relay.WriterCommitting)
		}
		if d.Wake != nil && d.Floor != nil {
			w, f := d.Wake.Latency, d.Floor.Disk
			fmt.Fprintf(stdout, "  wake-up p50 / p99 on the data folder %.2f / %.2f ms; after the same idle, the disk's own write + fsync %.2f / %.2f ms",
				bench.Ms(w.P50), bench.Ms(w.P99), bench.Ms(f.P50), bench.Ms(f.P99))
			if s := d.Floor.Service; s != nil {
				fmt.Fprintf(stdout, ", a request to a do-nothing Go service that does it %.2f / %.2f ms", bench.Ms(s.P50), bench.Ms(s.P99))
			}
			fmt.Fprintln(stdout)
		}
	}
	return nil
}

// benchInChild starts a child relay in a temporary data dir made in
// parent, runs the bench against it, stops it and removes the dir. A
// profile file, when set, gets the child's CPU profile of the lifecycle.
func benchInChild(ctx context.Context, o bench.Options, parent, profile string, stderr io.Writer) (*bench.Report, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	return inBenchDir(parent, func(dir string) (*bench.Report, error) {
		return benchChildIn(ctx, o, self, dir, profile, stderr)
	})
}

// benchChildIn runs self as a child relay with its data in dir, runs the
// bench against it and stops it.
func benchChildIn(ctx context.Context, o bench.Options, self, dir, profile string, stderr io.Writer) (rep *bench.Report, err error) {
	t0 := time.Now()
	args := []string{"--relay-child", dir}
	if profile != "" {
		args = append(args, "--cpuprofile", profile)
	}
	relayChild, ready, err := startChild(self, args, "", "child relay", 2, stderr)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, relayChild.stop()) }()
	o.URL, o.AdminToken = ready[0], ready[1]
	o.Startup = time.Since(t0)
	probe := &childProbe{in: relayChild.in, out: relayChild.out}
	o.Probe = probe
	if profile != "" {
		o.Profiler = childProfiler{probe}
	}
	o.SelfCPU = processCPU
	o.Progress = stderr
	floor, ready, err := startChild(self, []string{"--floor-child", dir}, "", "floor service", 1, stderr)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, floor.stop()) }()
	o.FloorDir, o.FloorURL = dir, ready[0]
	return bench.Run(ctx, o)
}

// child is a bench child process (`bench --relay-child DIR`, `bench
// --floor-child DIR`): it says "ready" and its details on its first line of
// output, and stops at the end of its input.
type child struct {
	name string // in errors
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

// startChild starts self's bench with args, writes first (when set) as its
// first line of input, and reads its ready line, which must carry fields
// details after "ready"; it returns those details.
func startChild(self string, args []string, first, name string, fields int, stderr io.Writer) (*child, []string, error) {
	cmd := exec.Command(self, append([]string{"bench"}, args...)...)
	cmd.Env = config.WithoutRelayEnv(os.Environ())
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, in: in, out: bufio.NewReader(out)}
	if first != "" {
		if _, err := io.WriteString(in, first+"\n"); err != nil {
			return nil, nil, errors.Join(fmt.Errorf("%s: %w", name, err), c.stop())
		}
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("%s did not start: %w", name, err), c.stop())
	}
	f := strings.Fields(line)
	if len(f) != fields+1 || f[0] != "ready" {
		return nil, nil, errors.Join(fmt.Errorf("%s: unexpected first line %q", name, strings.TrimSpace(line)), c.stop())
	}
	return c, f[1:], nil
}

// stop ends the child's input, which stops it, and waits for it to exit,
// killing it after 30 s.
func (c *child) stop() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 30 s; killed", c.name)
	}
}

// childProbe asks the child relay for samples over its stdin and stdout.
type childProbe struct {
	mu  sync.Mutex
	in  io.Writer
	out *bufio.Reader
}

// Sample implements bench.Probe.
func (p *childProbe) Sample(context.Context) (bench.Sample, error) { return p.ask("sample") }

// Settled implements bench.Probe.
func (p *childProbe) Settled(context.Context) (bench.Sample, error) { return p.ask("settled") }

// ask sends the child one request ("sample" or "settled") and reads its
// sample.
func (p *childProbe) ask(request string) (bench.Sample, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var s bench.Sample
	if _, err := io.WriteString(p.in, request+"\n"); err != nil {
		return s, fmt.Errorf("sample the child relay: %w", err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return s, fmt.Errorf("sample the child relay: %w", err)
	}
	if err := json.Unmarshal(line, &s); err != nil {
		return s, fmt.Errorf("sample the child relay: %w", err)
	}
	return s, nil
}

// Child is what a child relay is told on its command line: the verb's
// hidden flags, which the parent passes it (startChild).
type Child struct {
	// Dir is the relay's data folder (--relay-child DIR).
	Dir string
	// Version is the version the relay reports.
	Version string
	// Profile is the file the relay records its CPU profile into when the
	// parent asks (--cpuprofile FILE, profile.go); "" refuses the request.
	Profile string
	// MeshEmbed, when set, runs NATS inside the relay on this HOST:PORT
	// (--mesh-embed, mesh.go).
	MeshEmbed string
	// MeshJoin has the relay join the NATS URL on its first line of input
	// (--mesh-join: an invite, so it stays off the command line).
	MeshJoin bool
}

// ServeChild is the child side: it serves a relay as c says, prints its
// ready line, answers the parent's samples (and profile requests) on stdin
// until stdin ends, and shuts the relay down. In a mesh the relay trusts
// every relay of it (scratch relays of one bench).
func ServeChild(c Child, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	in := bufio.NewReader(stdin)
	var extra []string
	switch {
	case c.MeshEmbed != "":
		extra = []string{"--nats-embed", c.MeshEmbed, "--nats-name", "bench-a", "--mesh-trust", config.TrustAccount}
	case c.MeshJoin:
		url, err := in.ReadString('\n')
		if err != nil {
			return fmt.Errorf("bench child: read the NATS URL to join: %w", err)
		}
		extra = []string{"--nats", strings.TrimSpace(url), "--nats-name", "bench-b", "--mesh-trust", config.TrustAccount}
	}
	cfg, err := benchConfig(c.Dir, extra...)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := app.Start(cfg, app.StartOptions{Version: c.Version, Logger: log})
	if err != nil {
		return fmt.Errorf("bench child: start relay: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if shErr := r.Shutdown(sctx); shErr != nil {
			err = errors.Join(err, fmt.Errorf("bench child: shut the relay down: %w", shErr))
		}
	}()
	url := "http://" + r.Addr().String()
	hc := bench.NewClient(url, 2)
	hctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_, err = hc.WaitHealthy(hctx)
	cancel()
	hc.Close()
	if err != nil {
		return fmt.Errorf("bench child: %w", err)
	}
	token, err := cfg.AdminToken(false)
	if err != nil {
		return fmt.Errorf("bench child: admin token: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "ready %s %s\n", url, token); err != nil {
		return fmt.Errorf("bench child: %w", err)
	}
	stats, _ := r.Service().(interface{ WriteStats() store.WriteStats })
	prof := &cpuProfile{path: c.Profile}
	defer func() { err = errors.Join(err, prof.stop()) }()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if ok, perr := prof.handle(sc.Text()); ok {
			answer := "ok\n"
			if perr != nil {
				answer = "error: " + perr.Error() + "\n"
			}
			if _, err := io.WriteString(stdout, answer); err != nil {
				return fmt.Errorf("bench child: %w", err)
			}
			continue
		}
		switch sc.Text() {
		case "sample":
		case "settled":
			debug.FreeOSMemory() // collects garbage first
		default:
			return fmt.Errorf("bench child: unknown request %q", sc.Text())
		}
		var s bench.Sample
		s.CPU, _ = processCPU()
		if m, err := bench.ReadMemory(); err == nil {
			s.RSS, s.RSSAnon = m.RSS, m.Anon
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.GoStacks, s.GoHeap = int64(ms.StackInuse), int64(ms.HeapInuse)
		s.GoLive, s.Goroutines = int64(ms.HeapAlloc+ms.StackInuse), runtime.NumGoroutine()
		if stats != nil {
			w := stats.WriteStats()
			s.Batches, s.Writes = w.Batches, w.Writes
			s.WriterBusy, s.Committing = w.Busy, w.Committing
		}
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("bench child: %w", err)
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("bench child: %w", err)
		}
	}
	return sc.Err()
}

// clockTicks is Linux's USER_HZ, the unit of /proc/self/stat's times.
const clockTicks = 100

// processCPU is this process's user + system CPU time from /proc/self/stat
// (Linux only).
func processCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, fmt.Errorf("process CPU: %w", err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("process CPU: malformed /proc/self/stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("process CPU: short /proc/self/stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("process CPU: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}
