package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// These tests run the real binary as a child process: they build it once,
// start `serve` on a free loopback port with a temp data dir, and talk to
// it over HTTP (MCP with per-agent tokens, the bridge with the admin token).

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// relayBinary builds the relay once per test run (no build tags: no window
// libraries; frontend/dist is embedded as it is).
func relayBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "crosschat-crash-")
		if buildErr != nil {
			return
		}
		goTool := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, err := os.Stat(goTool); os.Getenv("GOROOT") == "" || err != nil {
			goTool = "go"
		}
		buildBin = filepath.Join(buildDir, "crosschat-relay")
		out, err := exec.Command(goTool, "build", "-o", buildBin, "github.com/crosschat/crosschat-relay").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}
