package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// childEnv is the environment without CROSSCHAT_* settings, so the tests
// never pick up a developer's relay configuration.
func childEnv() []string { return config.WithoutRelayEnv(os.Environ()) }

// relayProc is one `serve` child process.
type relayProc struct {
	cmd     *exec.Cmd
	url     string
	port    int
	out     *testkit.Buffer
	done    chan struct{}
	waitErr error
}

// exited reports whether the process has ended.
func (p *relayProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to end and returns its exit error.
func (p *relayProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(d):
		t.Fatalf("relay (pid %d) still running after %s\n%s", p.cmd.Process.Pid, d, p.out.String())
		return nil
	}
}

// childRelay skips the test in -short mode; otherwise it starts `serve` on
// a fresh data folder and returns the process and the folder.
func childRelay(t *testing.T) (*relayProc, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	dataDir := t.TempDir()
	return startProcess(t, dataDir), dataDir
}

// startProcess starts `serve` on dataDir and waits for /health 200. It
// retries on another port if the chosen one was taken in between.
func startProcess(t *testing.T, dataDir string) *relayProc {
	t.Helper()
	bin := relayBinary(t)
	var last string
	for attempt := 0; attempt < 3; attempt++ {
		port := testkit.FreePort(t)
		p := &relayProc{port: port, url: "http://127.0.0.1:" + strconv.Itoa(port), out: &testkit.Buffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(bin, "serve", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--data-dir", dataDir)
		p.cmd.Env = childEnv()
		p.cmd.Dir = dataDir
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start relay: %v", err)
		}
		go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			if !p.exited() {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		})
		c := bench.NewClient(p.url, 2)
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := c.Health(context.Background())
			if err == nil {
				c.Close()
				return p
			}
			if p.exited() || time.Now().After(deadline) {
				break
			}
			select {
			case <-p.done:
			case <-time.After(20 * time.Millisecond):
			}
		}
		c.Close()
		if !p.exited() {
			t.Fatalf("relay did not answer /health 200 within 30 s\n%s", p.out.String())
		}
		last = p.out.String()
		if !strings.Contains(last, "address already in use") {
			break
		}
	}
	t.Fatalf("relay exited during start-up\n%s", last)
	return nil
}

// cli runs a CLI verb of the binary and returns its standard output.
func cli(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(relayBinary(t), args...)
	cmd.Env = childEnv()
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crosschat-relay %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

type testAgent struct{ slug, token string }

// addAgent creates an agent with the CLI verb and returns its token.
func addAgent(t *testing.T, p *relayProc, dataDir, slug string) testAgent {
	t.Helper()
	out := cli(t, "agents", "add", slug, "--name", strings.ToUpper(slug[:1])+slug[1:], "--model", "test-model",
		"--capability", "text-input", "--capability", "text-output", "--json",
		"--port", strconv.Itoa(p.port), "--data-dir", dataDir)
	var reveal struct {
		Agent relay.Agent `json:"agent"`
		Token string      `json:"token"`
	}
	if err := json.Unmarshal(out, &reveal); err != nil {
		t.Fatalf("agents add %s: %v\n%s", slug, err, out)
	}
	if reveal.Agent.Slug != slug || !strings.HasPrefix(reveal.Token, relay.AgentTokenPrefix) {
		t.Fatalf("agents add %s answered %s", slug, out)
	}
	return testAgent{slug: slug, token: reveal.Token}
}

func adminToken(t *testing.T, dataDir string) string {
	t.Helper()
	tok := strings.TrimSpace(string(cli(t, "token", "--data-dir", dataDir)))
	if tok == "" {
		t.Fatal("token printed nothing")
	}
	return tok
}

type claimAnswer struct {
	Status string      `json:"status"`
	Task   *relay.Task `json:"task"`
}

// ackReport is a report the relay acknowledged.
type ackReport struct {
	id, kind string
}

// acks is everything the relay acknowledged before the crash.
type acks struct {
	mu      sync.Mutex
	posted  map[string]relay.Task // task id → the task as posted
	claimed map[string]bool
	reports map[string][]ackReport // task id → reports
	ops     atomic.Int64
}
