package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/benchrun"
	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/config"
)

// benchAbout explains `crosschat-relay bench` in its help.
const benchAbout = `Measures a relay with MCP load over real HTTP, one token per agent: the full
task lifecycle with N concurrent agents (lifecycles/s, p50/p99 per tool),
the relay's CPU time per tool call (and over the bench's own, which gauges
the machine's speed of the moment), fsyncs per lifecycle (commits of the
group-committing writer per lifecycle), how busy that writer was,
wake-up latency of a waiting claim_next_task (next to the floor under it
when the bench made the data folder: the disk's own write and fsync, and
a do-nothing Go service doing that per request, after the same idle
gap), RSS after load, 1,000 parked claims at once (memory per
waiter, wake-up latency among them), claim latency with short and long
queues, and start-up time.

Without --url it starts the relay twice, each time as a child process of
its own (so CPU and memory are the relay's alone) in a temporary data
directory on a random loopback port: once in --data-dir's folder (the
disk), then in --tmpfs (where fsync is free), and prints both with their
ratio. --rounds N does that N times, interleaved, so that a busy moment of
the machine falls on both, and ends with each figure's median and every
round's value (the parked claims are measured in every round, the long
queues in the first). The directories are removed afterwards. With --url
it creates agents and tasks in that relay and leaves them there: point it
at a scratch relay.

--mesh measures two relays in one mesh instead, each a child process:
relay A runs NATS inside it, relay B joins with an invite, and A's agents
post to B's agents, which claim, report and complete on B while the
senders read their updates on A; the wake-up is a post on A answering a
claim waiting on B. It prints the lifecycle, the wake-up and each relay's
CPU and commits per lifecycle (--rounds N: N pairs, then the medians).
To measure two relays on two computers, already in one mesh and trusting
each other, give --url and --token of one and --peer-url and --peer-token
of the other (or ` + envPeerToken + `); each relay must answer the bench's
computer (--host and --allowed-hosts).`

// benchCmd runs `crosschat-relay bench`.
func benchCmd(args []string, version string, stdout, stderr io.Writer) error {
	env, err := app.Env()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		o          bench.Options
		queueSizes string
		jsonOut    bool
		token      string
		dataParent string
		tmpfs      string
		inProcess  bool
		child      string
		floorChild string
		rounds     int
		meshRun    bool
		peerURL    string
		peerToken  string
		meshEmbed  string
		meshJoin   bool
		profileDir string
	)
	fs.StringVar(&o.URL, "url", "", "base URL of a running relay, e.g. http://127.0.0.1:4318 (default: start one in this process)")
	fs.StringVar(&token, "token", "", "admin token of the --url relay (default: env "+config.EnvAPIToken+")")
	fs.IntVar(&o.Agents, "agents", bench.DefaultAgents, "concurrent agents in the lifecycle phase")
	fs.IntVar(&o.Tasks, "tasks", bench.DefaultTasks, "lifecycles to run")
	fs.IntVar(&o.Window, "window", bench.DefaultWindow, "open tasks each sender keeps at once")
	fs.StringVar(&queueSizes, "queue-sizes", "10,100000", "comma-separated queue depths to time claims at (\"\" skips)")
	fs.IntVar(&o.ClaimSamples, "claim-samples", bench.DefaultClaimSamples, "claims timed at each queue depth")
	fs.IntVar(&o.WakeSamples, "wake-samples", bench.DefaultWakeSamples, "wake-up samples (0 skips)")
	fs.DurationVar(&o.Timeout, "timeout", bench.DefaultTimeout, "give up after this long")
	fs.StringVar(&dataParent, "data-dir", "", "folder to create the relay's temporary data dir in (default: the system temp dir)")
	fs.StringVar(&tmpfs, "tmpfs", benchrun.DefaultTmpfs(), "tmpfs folder for the second run (\"\" skips it)")
	fs.IntVar(&o.Waiters, "waiters", bench.DefaultWaiters, "waiting claims parked at once in the waiters phase (0 skips)")
	fs.IntVar(&rounds, "rounds", 1, "measure the data folder and tmpfs this many times, interleaved, and print each figure's median")
	fs.BoolVar(&inProcess, "in-process", false, "run the relay inside the bench process (one run, no CPU or commit figures)")
	fs.StringVar(&child, "relay-child", "", "internal: serve a bench relay on this data dir and answer samples on stdin")
	fs.StringVar(&floorChild, "floor-child", "", "internal: serve the bench's floor service, writing in this dir, until stdin ends")
	fs.BoolVar(&meshRun, "mesh", false, "measure two child relays in one mesh (NATS inside the first), across them")
	fs.StringVar(&peerURL, "peer-url", "", "with --url: base URL of a second relay in one mesh with it, whose agents work for the first's")
	fs.StringVar(&peerToken, "peer-token", "", "admin token of the --peer-url relay (default: env "+envPeerToken+")")
	fs.StringVar(&meshEmbed, "mesh-embed", "", "internal: with --relay-child, run NATS inside the relay on this HOST:PORT")
	fs.BoolVar(&meshJoin, "mesh-join", false, "internal: with --relay-child, join the NATS URL read from the first line of input")
	fs.StringVar(&profileDir, "cpuprofile", "", "write each child relay's CPU profile over the lifecycle phase into this folder (relay-disk-N.pprof, relay-tmpfs-N.pprof; for go tool pprof)")
	fs.BoolVar(&jsonOut, "json", false, "print the report as JSON")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if child != "" {
		return benchrun.ServeChild(benchrun.Child{Dir: child, Version: version, Profile: profileDir, MeshEmbed: meshEmbed, MeshJoin: meshJoin}, os.Stdin, stdout, stderr)
	}
	if floorChild != "" {
		return benchrun.ServeFloor(floorChild, os.Stdin, stdout)
	}
	if o.Waiters == 0 {
		o.Waiters = -1
	}
	if rounds < 1 || rounds > maxBenchRounds {
		return fmt.Errorf("%w: bench: --rounds must be 1 to %d", errUsage, maxBenchRounds)
	}
	if profileDir != "" && (o.URL != "" || inProcess) {
		return fmt.Errorf("%w: bench: --cpuprofile profiles the child relays (not --url or --in-process)", errUsage)
	}
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
	}
	if rounds > 1 && (o.URL != "" || inProcess) {
		return fmt.Errorf("%w: bench: --rounds needs the child relays (not --url or --in-process)", errUsage)
	}
	switch {
	case peerURL != "" && o.URL == "":
		return fmt.Errorf("%w: bench: --peer-url goes with --url (the first relay of the two)", errUsage)
	case meshRun && (o.URL != "" || inProcess):
		return fmt.Errorf("%w: bench: --mesh starts two child relays; for running relays give --url and --peer-url", errUsage)
	}
	if o.QueueSizes, err = parseSizes(queueSizes); err != nil {
		return fmt.Errorf("%w: bench: --queue-sizes: %v", errUsage, err)
	}
	if o.WakeSamples == 0 {
		o.WakeSamples = -1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if o.URL != "" {
		if token == "" {
			token, _ = env(config.EnvAPIToken)
		}
		if o.AdminToken = strings.TrimSpace(token); o.AdminToken == "" {
			return fmt.Errorf("%w: bench: --url needs the relay's admin token: --token or %s", errUsage, config.EnvAPIToken)
		}
		if peerURL != "" {
			if peerToken == "" {
				peerToken, _ = env(envPeerToken)
			}
			if peerToken = strings.TrimSpace(peerToken); peerToken == "" {
				return fmt.Errorf("%w: bench: --peer-url needs that relay's admin token: --peer-token or %s", errUsage, envPeerToken)
			}
			o.Peer = &bench.Peer{URL: peerURL, AdminToken: peerToken}
		}
	}
	return benchrun.Run(ctx, benchrun.Options{
		Bench: o, Version: version, DataParent: dataParent, Tmpfs: tmpfs, Rounds: rounds,
		InProcess: inProcess, Mesh: meshRun, ProfileDir: profileDir, JSON: jsonOut,
		Stdout: stdout, Stderr: stderr,
	})
}

// envPeerToken holds the admin token of the --peer-url relay.
const envPeerToken = "CROSSCHAT_BENCH_PEER_TOKEN"

// maxBenchRounds bounds --rounds.
const maxBenchRounds = 50

// parseSizes reads "10,100000".
func parseSizes(s string) ([]int, error) {
	out := []int{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(p, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive whole number", p)
		}
		out = append(out, n)
	}
	return out, nil
}
