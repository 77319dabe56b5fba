package app_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// Ensure a start on a port another process holds says who holds it, once:
// the relay serving the same data folder (by its pid and address), or
// another program. The error is ErrPortTaken on every system (the window
// shows the running one on it). Nothing of the refused start is left
// behind: its data folder starts on a free port after.
func TestPortTakenSaysWho(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	dir := filepath.Join(t.TempDir(), "data")
	first := apptest.Start(t, apptest.Config(dir), app.StartOptions{Version: "test"})
	port := first.Config().Port
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// The commands it names reach that relay, as the banner's do: its port
	// and folder are not the defaults, so a bare `quit` would stop another.
	at := fmt.Sprintf(" --port %d --data-dir %s", port, dir)
	running := fmt.Sprintf("%s: address already in use: Crosschat Relay (pid %d, %s) is already running on the data folder %s: `crosschat-relay status%s` shows it, `crosschat-relay quit%s` stops it",
		addr, os.Getpid(), first.Config().BaseURL(), dir, at, at)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	otherPort := ln.Addr().(*net.TCPAddr).Port
	other := func(port int) string {
		return fmt.Sprintf("127.0.0.1:%d: address already in use: another program (or a relay with another data folder) listens there: choose another port with --port, or stop that program", port)
	}
	dir2 := filepath.Join(t.TempDir(), "data2")

	for _, tc := range []struct {
		name, dir string
		port      int
		want      string
		ours      bool // the folder's relay runs, nothing failed: said on the terminal alone
	}{
		{"the relay of the same data folder", dir, port, running, true},
		{"a relay of another data folder", dir2, port, other(port), false},
		{"another program", dir2, otherPort, other(otherPort), false},
		// The folder's relay runs, but on another port: told apart, so
		// that its quit is not what is advised.
		{"another program, the folder's relay elsewhere", dir, otherPort,
			other(otherPort) + " (the relay of the data folder " + dir + " runs at " + first.Config().BaseURL() + ")", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := apptest.Config(tc.dir)
			cfg.Port = tc.port
			r, err := app.Start(cfg, app.StartOptions{Version: "test"})
			if err == nil {
				apptest.Stop(t, r)
				t.Fatal("started on a taken port")
			}
			if err.Error() != tc.want || !errors.Is(err, app.ErrPortTaken) || errors.Is(err, app.ErrAlreadyRunning) != tc.ours {
				t.Fatalf("start: %v (ErrPortTaken %v, ErrAlreadyRunning %v)\nwant: %s", err, errors.Is(err, app.ErrPortTaken), errors.Is(err, app.ErrAlreadyRunning), tc.want)
			}
			var out, errb testkit.Buffer
			logFile := filepath.Join(t.TempDir(), "relay.log")
			code := app.Serve([]string{"--port", strconv.Itoa(tc.port), "--data-dir", tc.dir, "--log-file", logFile}, nil, "test", &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "in use") != 1 {
				t.Fatalf("serve: exit %d\n%s\nwant once: %s", code, errb.String(), tc.want)
			}
			logged, _ := os.ReadFile(logFile)
			if tc.ours && (errb.String() != "crosschat-relay serve: "+tc.want+"\n" || len(logged) != 0) {
				t.Fatalf("serve beside the running relay: stderr %q, log %q; want the line alone, on the terminal", errb.String(), logged)
			}
			if !tc.ours && !strings.Contains(string(logged), "start failed") {
				t.Fatalf("serve on another's port: log %q; want the failure logged", logged)
			}
		})
	}
	// The look at dir2's lock gave it back.
	apptest.Start(t, apptest.Config(dir2), app.StartOptions{Version: "test"})
}

// Ensure a relay on the default loopback address holds its port on both
// loopback addresses: its URLs say localhost, which browsers (and Go and
// Node, where the hosts file says so) try on [::1] first, so a port free
// there let any local process listen in the relay's place and be handed
// the admin token. The relay answers on [::1] too, nobody else can listen
// there, and a start whose [::1] port another program holds is refused,
// naming it.
func TestPortHeldOnBothLoopbackAddresses(t *testing.T) {
	probe, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	probe.Close()
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "[::1]", "LOCALHOST", "localhost."} {
		t.Run(host, func(t *testing.T) {
			cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
			cfg.Host = host
			r := apptest.Start(t, cfg, app.StartOptions{Version: "test"})
			port := strconv.Itoa(r.Config().Port)
			if got := r.Config().BaseURL(); got != "http://localhost:"+port {
				t.Fatalf("BaseURL = %s; want it on localhost, which both addresses serve", got)
			}
			for _, addr := range []string{"127.0.0.1:" + port, "[::1]:" + port} {
				if ln, err := net.Listen("tcp", addr); err == nil {
					ln.Close()
					t.Fatalf("another process could listen on %s beside the relay", addr)
				}
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("the relay does not answer on %s: %v", addr, err)
				}
				fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n", port)
				buf := make([]byte, 12)
				_, err = io.ReadFull(c, buf)
				c.Close()
				if err != nil || string(buf) != "HTTP/1.1 200" {
					t.Fatalf("GET /health on %s: %q, %v", addr, buf, err)
				}
			}
		})
	}

	squat, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	port := squat.Addr().(*net.TCPAddr).Port
	cfg := apptest.Config(filepath.Join(t.TempDir(), "data"))
	cfg.Port = port
	r, err := app.Start(cfg, app.StartOptions{Version: "test"})
	if err == nil {
		apptest.Stop(t, r)
		t.Fatalf("started while another program holds [::1]:%d", port)
	}
	want := fmt.Sprintf("[::1]:%d: address already in use: another program listens on the other loopback address of this port", port)
	if !errors.Is(err, app.ErrPortTaken) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("start: %v\nwant ErrPortTaken starting %q", err, want)
	}
	// Nothing of the refused start holds 127.0.0.1's port.
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("the refused start left 127.0.0.1:%d held: %v", port, err)
	}
	ln.Close()
}
