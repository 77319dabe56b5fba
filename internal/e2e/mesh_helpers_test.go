package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	cclient "github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// meshProc is one relay process in the mesh.
type meshProc struct {
	name, dir, nats string
	port            int
	// meshArgs, when set, replace the NATS flags (and the operator slug:
	// the default one is kept).
	meshArgs []string
	cmd      *exec.Cmd
	done     chan struct{}
	out      *testkit.Buffer
}

func (r *meshProc) start(t *testing.T) {
	t.Helper()
	r.out = &testkit.Buffer{}
	args := []string{"serve", "--host", "127.0.0.1", "--port", strconv.Itoa(r.port), "--data-dir", r.dir}
	if r.meshArgs != nil {
		args = append(args, r.meshArgs...)
	} else {
		args = append(args, "--operator-slug", "operator-"+r.name, "--nats", r.nats, "--nats-name", r.name, "--nats-replicas", "3")
	}
	r.cmd = exec.Command(relayBinary(t), args...)
	r.cmd.Env = childEnv()
	r.cmd.Dir = r.dir
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", r.name, err)
	}
	r.done = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { r.kill() })
	deadline := time.Now().Add(30 * time.Second)
health:
	for {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(r.port) + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break health
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start\n%s", r.name, r.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for {
		var st struct{ Ready bool }
		out := cli(t, "mesh", "status", "--json", "--port", strconv.Itoa(r.port), "--data-dir", r.dir)
		if json.Unmarshal(out, &st) == nil && st.Ready {
			return
		}
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("%s did not join the mesh: %s\n%s", r.name, out, r.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill ends the relay with SIGKILL: no shutdown, no cleanup.
func (r *meshProc) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		<-r.done
		r.cmd = nil
	}
}

// agent is a real MCP client session of one agent on one relay.
type meshAgent struct {
	slug  string
	token string
	relay *meshProc
}

func (a meshAgent) call(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	trans, err := transport.NewStreamableHTTP("http://127.0.0.1:"+strconv.Itoa(a.relay.port)+"/mcp",
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + a.token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("%s: start MCP: %v", a.slug, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "mesh-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("%s: initialize: %v", a.slug, err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s %s: %v", a.slug, tool, err)
	}
	if res.IsError {
		t.Fatalf("%s %s: %+v", a.slug, tool, res.Content)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v", a.slug, tool, err)
		}
	}
}

func addMeshAgent(t *testing.T, r *meshProc, slug string) meshAgent {
	t.Helper()
	out := cli(t, "agents", "add", slug, "--name", slug, "--model", "test-model", "--capability", "text-output", "--json",
		"--port", strconv.Itoa(r.port), "--data-dir", r.dir)
	var reveal struct{ Token string }
	if err := json.Unmarshal(out, &reveal); err != nil || reveal.Token == "" {
		t.Fatalf("agents add %s on %s: %v %s", slug, r.name, err, out)
	}
	return meshAgent{slug: slug, token: reveal.Token, relay: r}
}

// inbox keeps every update alice has read, per task, to check each arrived
// exactly once and in order.
type inbox struct {
	byTask map[string][]string
}

func (in *inbox) read(t *testing.T, a meshAgent) {
	t.Helper()
	var u relay.Updates
	a.call(t, "read_updates", map[string]any{"limit": 100}, &u)
	for _, e := range u.Updates {
		in.byTask[e.TaskID] = append(in.byTask[e.TaskID], e.Type)
	}
}

// await reads until task has at least n updates, then checks them.
func (in *inbox) await(t *testing.T, a meshAgent, task string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for len(in.byTask[task]) < len(want) {
		if time.Now().After(deadline) {
			t.Fatalf("task %s: updates %v; want %v", task, in.byTask[task], want)
		}
		in.read(t, a)
		time.Sleep(50 * time.Millisecond)
	}
	if got := strings.Join(in.byTask[task], ","); got != strings.Join(want, ",") {
		t.Fatalf("task %s: updates %s; want %s exactly once, in order", task, got, strings.Join(want, ","))
	}
}

// awaitListed waits until a's list_agents shows slug on relayName.
func awaitListed(t *testing.T, a meshAgent, slug, relayName string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var l struct{ Agents []relay.Agent }
		a.call(t, "list_agents", map[string]any{"includeOffline": true}, &l)
		for _, ag := range l.Agents {
			if ag.Slug == slug && ag.Relay == relayName {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listed %s on %s", a.slug, slug, relayName)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scrapeMetrics reads a relay's /metrics from loopback (no token needed there).
func scrapeMetrics(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// loc is the CLI's flags that find relay r.
func (r *meshProc) loc() []string {
	return []string{"--port", strconv.Itoa(r.port), "--data-dir", r.dir}
}

// trust runs `mesh trust NAME --fingerprint FP` on r, with the fingerprint
// the other relay's own `mesh relays --json` shows for itself (as its
// operator would read it out), until r has seen it.
func (r *meshProc) trust(t *testing.T, other *meshProc) {
	t.Helper()
	var rs []struct {
		Name, Fingerprint string
		Self              bool
	}
	if err := json.Unmarshal(cli(t, append([]string{"mesh", "relays", "--json"}, other.loc()...)...), &rs); err != nil {
		t.Fatalf("mesh relays on %s: %v", other.name, err)
	}
	fp := ""
	for _, x := range rs {
		if x.Self {
			fp = x.Fingerprint
		}
	}
	if !strings.HasPrefix(fp, "SHA256:") {
		t.Fatalf("%s shows no fingerprint of its own: %+v", other.name, rs)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		cmd := exec.Command(relayBinary(t), append([]string{"mesh", "trust", other.name, "--fingerprint", fp}, r.loc()...)...)
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		if err == nil && strings.Contains(string(out), "is trusted") && strings.Contains(string(out), fp) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mesh trust %s on %s: %v %s", other.name, r.name, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// trustAll makes each relay's operator trust every other relay.
func trustAll(t *testing.T, rs ...*meshProc) {
	t.Helper()
	for _, r := range rs {
		for _, o := range rs {
			if r != o {
				r.trust(t, o)
			}
		}
	}
}

// bridge is the dashboard's API of relay r, signed in with its admin token.
func (r *meshProc) bridge(t *testing.T) *cclient.Client {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(r.dir, config.TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	return cclient.New("http://127.0.0.1:"+strconv.Itoa(r.port), strings.TrimSpace(string(tok)))
}
