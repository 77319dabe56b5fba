package app

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/config"
)

// The start banner's commands reach this relay: a relay on another port or
// data folder names them with its --port/--data-dir (plain, they would print
// another relay's token, or stop it), and the default one names none.
func TestBannerCommandsReachThisRelay(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("LOCALAPPDATA", "")
	def := config.DefaultDataDir(os.LookupEnv)
	other := filepath.Join(home, "relay b")
	for _, tc := range []struct {
		name      string
		host      string
		port      int
		dataDir   string
		wantFlags string
	}{
		{"defaults", "127.0.0.1", config.DefaultPort, def, ""},
		{"every address", "0.0.0.0", config.DefaultPort, def, ""},
		{"another port and folder", "127.0.0.1", 4319, other, " --port 4319 --data-dir '" + other + "'"},
		{"another folder", "127.0.0.1", config.DefaultPort, filepath.Join(home, "relay-c"), " --data-dir " + filepath.Join(home, "relay-c")},
		// A verb given --port asks it on its --host (127.0.0.1), so a relay
		// on one other address names it too (it printed `quit --port 4319`,
		// which found no relay); without --port the run file names it.
		{"another address and port", "127.0.0.2", 4319, def, " --host 127.0.0.2 --port 4319"},
		// A LAN address is no verb's to reach over plain HTTP: the token
		// is read from the folder, and no quit is offered.
		{"a LAN address, another port and folder", "192.168.1.5", 4319, other, " --port 4319 --data-dir '" + other + "'"},
		{"IPv6 loopback on another port", "::1", 4319, def, " --port 4319"},
		{"IPv6 loopback in brackets on another port", "[::1]", 4319, def, " --port 4319"},
		{"localhost on another port", "localhost", 4319, def, " --port 4319"},
		{"LOCALHOST. on another port", "LOCALHOST.", 4319, def, " --port 4319"},
		{"every address on another port", "0.0.0.0", 4319, def, " --port 4319"},
		{"every IPv6 address on another port", "::", 4319, def, " --port 4319"},
		{"another address, the default port", "127.0.0.2", config.DefaultPort, filepath.Join(home, "relay-c"), " --data-dir " + filepath.Join(home, "relay-c")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			cfg := config.Config{Host: tc.host, Port: tc.port, DataDir: tc.dataDir}
			printBanner(&b, cfg, "test", cfg.Addr())
			lan := tc.host == "192.168.1.5"
			for _, verb := range []string{"token", "quit"} {
				want := "`crosschat-relay " + verb + tc.wantFlags + "`"
				if strings.Contains(b.String(), want) == (lan && verb == "quit") {
					t.Errorf("the banner (%s %s): want it %v:\n%s", verb, want, !(lan && verb == "quit"), b.String())
				}
			}
			if lan && !strings.Contains(b.String(), "(stop with Ctrl+C)\n") {
				t.Errorf("a LAN relay's banner names no quit it cannot reach:\n%s", b.String())
			}
		})
	}
}

// The banner's "Listening on" names both loopback addresses a relay on the
// default host holds, and the configured address for any other host.
func TestBannerSaysBothLoopbackAddresses(t *testing.T) {
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
		probe, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Logf("no %s here: %v", host, err)
			continue
		}
		probe.Close()
		cfg := config.Config{Host: host, DataDir: filepath.Join(t.TempDir(), "data"), OperatorSlug: "operator", TaskRetentionDays: 30}
		r, err := Start(cfg, StartOptions{Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(r.Config().Port)
		want := host + ":" + port
		if host == "127.0.0.1" {
			if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
				ln.Close()
				want += " and [::1]:" + port
			}
		}
		got := r.listening()
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: listening on %q, want %q", host, got, want)
		}
	}
}
