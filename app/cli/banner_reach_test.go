//go:build linux

package cli_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// The commands the start banner of a relay on another loopback address
// (127.0.0.2: Linux answers on all of 127.0.0.0/8) prints work as printed:
// its dashboard URL is accepted (its own address is an allowed Host), the
// token command prints the token, and the quit command stops it.
func TestBannerCommandsWorkOnAnotherLoopbackAddress(t *testing.T) {
	projectHome(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	t.Setenv("CROSSCHAT_PORT", "")
	t.Setenv("CROSSCHAT_HOST", "")
	t.Setenv("CROSSCHAT_DATA_DIR", "")
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := filepath.Join(t.TempDir(), "relay data")
	var out, errb testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- app.Serve([]string{"--host", "127.0.0.2", "--port", strconv.Itoa(port), "--data-dir", dir, "--log-file", filepath.Join(t.TempDir(), "log")}, nil, "test", &out, &errb)
	}()
	commands := regexp.MustCompile("`crosschat-relay ([^`]*)`")
	poll.Until(t, "the banner", 10*time.Second, func() bool { return len(commands.FindAllString(out.String(), -1)) == 2 }, func() string { return out.String() + errb.String() })
	found := commands.FindAllStringSubmatch(out.String(), -1)
	words := func(cmd string) []string {
		// The banner quotes the folder, which has a space, in single quotes.
		var ws []string
		for _, m := range regexp.MustCompile(`'[^']*'|\S+`).FindAllString(cmd, -1) {
			ws = append(ws, strings.Trim(m, "'"))
		}
		return ws
	}
	token, quit := words(found[0][1]), words(found[1][1])
	if token[0] != "token" || quit[0] != "quit" {
		t.Fatalf("the banner's commands: %q", found)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "api-token"))
	noErr(t, err)
	if tok, errs, code := run(t, token...); code != 0 || strings.TrimSpace(tok) != strings.TrimSpace(string(saved)) {
		t.Fatalf("%q: exit %d, %q %q", token, code, tok, errs)
	}
	if _, errs, code := run(t, append([]string{"status"}, quit[1:]...)...); code != 0 {
		t.Fatalf("status with the quit's flags: exit %d, %q", code, errs)
	}
	if _, errs, code := run(t, quit...); code != 0 {
		t.Fatalf("%q: exit %d, %q", quit, code, errs)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve ended with %d: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the relay still serves 30 s after the banner's quit")
	}
}
