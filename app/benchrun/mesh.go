package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/mesh"
)

// `crosschat-relay bench --mesh` measures two relays in one mesh, each a
// child process of its own (as `bench` runs one): relay A runs NATS with
// JetStream inside it on a free loopback port, relay B joins it with an
// invite A makes (handed to B on its input, never on a command line), both
// trust every relay of the mesh (scratch relays), and the bench runs the
// lifecycle with A's agents posting to B's, and the wake-up across them
// (bench.Peer). With --url and --peer-url it measures two running relays
// instead, on one computer or two.

// benchMesh runs rounds of two child relays in a mesh, in dataParent.
func benchMesh(ctx context.Context, o bench.Options, dataParent string, rounds int, jsonOut bool, stdout, stderr io.Writer) error {
	folder := dataParent
	if folder == "" {
		folder = os.TempDir()
	}
	var reps []*bench.Report
	for round := 1; round <= rounds; round++ {
		where := "mesh of two relays: " + folder
		if rounds > 1 {
			where = fmt.Sprintf("round %d of %d, %s", round, rounds, where)
		}
		fmt.Fprintf(stderr, "bench: === %s ===\n", where)
		rep, err := benchMeshIn(ctx, o, folder, stderr)
		if err != nil {
			return fmt.Errorf("bench (%s): %w", where, err)
		}
		reps = append(reps, rep)
	}
	med := bench.SummarizeMesh(reps)
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		var err error
		if rounds > 1 {
			err = enc.Encode(struct {
				Runs    []*bench.Report   `json:"runs"`
				Medians bench.MeshMedians `json:"medians"`
			}{reps, med})
		} else {
			err = enc.Encode(reps[0])
		}
		if err != nil {
			return fmt.Errorf("bench: write report: %w", err)
		}
		return nil
	}
	for i, rep := range reps {
		if rounds > 1 {
			fmt.Fprintf(stdout, "=== round %d ===\n", i+1)
		}
		if err := rep.WriteText(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	if rounds > 1 {
		return med.WriteText(stdout)
	}
	return nil
}

// benchMeshIn starts relay A (embedding NATS) and relay B (joining it) as
// child relays with their data in a temporary folder made in parent, runs
// the bench across them, stops them and removes the folder.
func benchMeshIn(ctx context.Context, o bench.Options, parent string, stderr io.Writer) (*bench.Report, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	return inBenchDir(parent, func(dir string) (rep *bench.Report, err error) {
		dirA, dirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		for _, d := range []string{dirA, dirB} {
			if err := os.Mkdir(d, 0o700); err != nil {
				return nil, fmt.Errorf("bench: %w", err)
			}
		}
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		a, readyA, err := startChild(self, []string{"--relay-child", dirA, "--mesh-embed", "127.0.0.1:" + strconv.Itoa(port)}, "", "mesh relay A", 2, stderr)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, a.stop()) }()
		c := bench.NewClient(readyA[0], 2)
		var inv mesh.Invite
		err = c.Bridge(ctx, readyA[1], "Mesh", "Invite", &inv)
		c.Close()
		if err != nil {
			return nil, fmt.Errorf("bench: an invite from relay A: %w", err)
		}
		b, readyB, err := startChild(self, []string{"--relay-child", dirB, "--mesh-join"}, inv.URL, "mesh relay B", 2, stderr)
		if err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, b.stop()) }() // before A, whose NATS it uses
		for _, r := range []struct{ name, url, token string }{{"A", readyA[0], readyA[1]}, {"B", readyB[0], readyB[1]}} {
			if err := meshReady(ctx, r.url, r.token); err != nil {
				return nil, fmt.Errorf("bench: mesh relay %s: %w", r.name, err)
			}
		}
		o.URL, o.AdminToken = readyA[0], readyA[1]
		o.Probe = &childProbe{in: a.in, out: a.out}
		o.Peer = &bench.Peer{URL: readyB[0], AdminToken: readyB[1], Probe: &childProbe{in: b.in, out: b.out}}
		o.SelfCPU = processCPU
		o.Progress = stderr
		return bench.Run(ctx, o)
	})
}

// meshReadyWait bounds how long a bench relay takes to join its mesh.
const meshReadyWait = time.Minute

// meshReady waits until the relay at url has joined its mesh (stream,
// directory and consumer set up): before that it cannot take a new slug.
func meshReady(ctx context.Context, url, token string) error {
	c := bench.NewClient(url, 2)
	defer c.Close()
	deadline := time.Now().Add(meshReadyWait)
	for {
		var st mesh.Status
		err := c.Bridge(ctx, token, "Mesh", "Status", &st)
		if err == nil && st.Ready {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("not joined after %s (link %s; %s)", meshReadyWait, st.Link, st.LastError)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeLoopbackPort is a TCP port free on 127.0.0.1 a moment ago: the
// embedded NATS server's.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: a free port for NATS: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}
