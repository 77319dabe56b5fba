package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// The mesh end to end, with real processes: a three-node JetStream cluster
// (nats-server built from the Go module this repository pins) and three
// relays on loopback, then faults. It runs when CROSSCHAT_E2E_MESH is set
// (make e2e-mesh, part of make test); CROSSCHAT_E2E_MESH_CUT sets how long
// relay A is cut off from NATS (default 60s).

var (
	natsOnce sync.Once
	natsBin  string
	natsErr  error
)

// natsServerBinary builds nats-server from the module pinned in go.mod.
func natsServerBinary(t *testing.T) string {
	t.Helper()
	natsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "crosschat-nats-")
		if err != nil {
			natsErr = err
			return
		}
		natsBin = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			natsErr = fmt.Errorf("go build nats-server: %w\n%s", err, out)
		}
	})
	if natsErr != nil {
		t.Fatal(natsErr)
	}
	return natsBin
}

// natsNode is one nats-server process of the cluster.
type natsNode struct {
	name        string
	port, route int
	dir         string
	routes      string
	cmd         *exec.Cmd
	done        chan struct{}
	out         *testkit.Buffer
}

func (n *natsNode) url() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

func (n *natsNode) start(t *testing.T) {
	t.Helper()
	n.out = &testkit.Buffer{}
	n.cmd = exec.Command(natsServerBinary(t), "-a", "127.0.0.1", "-p", strconv.Itoa(n.port), "--server_name", n.name,
		"--js", "--store_dir", n.dir, "--cluster_name", "crosschat", "--cluster", "nats://127.0.0.1:"+strconv.Itoa(n.route),
		"--routes", n.routes, "--no_advertise")
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", n.name, err)
	}
	n.done = make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(n.done) }()
	waitPort(t, n.port, n.name)
}

func (n *natsNode) stop(t *testing.T) {
	t.Helper()
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
	}
	n.cmd = nil
}

func waitPort(t *testing.T, port int, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not listen on %d", what, port)
}

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

func TestMeshEndToEnd(t *testing.T) {
	if os.Getenv("CROSSCHAT_E2E_MESH") == "" {
		t.Skip("set CROSSCHAT_E2E_MESH=1 (make e2e-mesh) to run the mesh with real processes")
	}
	cut := 60 * time.Second
	if v := os.Getenv("CROSSCHAT_E2E_MESH_CUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		cut = d
	}
	relayBinary(t)
	natsServerBinary(t)

	// Three NATS nodes in one JetStream cluster.
	nodes := make([]*natsNode, 3)
	var routes []string
	for i := range nodes {
		nodes[i] = &natsNode{name: "n" + strconv.Itoa(i+1), port: testkit.FreePort(t), route: testkit.FreePort(t), dir: t.TempDir()}
		routes = append(routes, "nats://127.0.0.1:"+strconv.Itoa(nodes[i].route))
	}
	for _, n := range nodes {
		n.routes = strings.Join(routes, ",")
		n.start(t)
		t.Cleanup(func() { n.stop(t) })
	}
	all := nodes[0].url() + "," + nodes[1].url() + "," + nodes[2].url()
	// Relay A reaches NATS only through a proxy the test can cut.
	natsA := "127.0.0.1:" + strconv.Itoa(nodes[0].port)
	px := newTCPProxy(t, natsA)
	ra := &meshProc{name: "relay-a", dir: t.TempDir(), nats: "nats://" + px.addr(), port: testkit.FreePort(t)}
	rb := &meshProc{name: "relay-b", dir: t.TempDir(), nats: all, port: testkit.FreePort(t)}
	rc := &meshProc{name: "relay-c", dir: t.TempDir(), nats: all, port: testkit.FreePort(t)}
	for _, r := range []*meshProc{ra, rb, rc} {
		r.start(t)
	}
	trustAll(t, ra, rb, rc)
	alice, bob, carol := addMeshAgent(t, ra, "alice"), addMeshAgent(t, rb, "bob"), addMeshAgent(t, rc, "carol")
	for _, a := range []meshAgent{alice, bob, carol} {
		a.call(t, "heartbeat", map[string]any{}, nil)
	}

	// list_agents on C shows every agent with its relay.
	wantRelays := map[string]string{"alice": "relay-a", "bob": "relay-b", "carol": "relay-c"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var l struct{ Agents []relay.Agent }
		carol.call(t, "list_agents", map[string]any{"includeOffline": true}, &l)
		found := 0
		for _, ag := range l.Agents {
			if wantRelays[ag.Slug] != "" && wantRelays[ag.Slug] == ag.Relay {
				found++
			}
		}
		if found == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list_agents on C: %+v", l.Agents)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A must know bob before posting to him.
	awaitListed(t, alice, "bob", "relay-b")

	in := &inbox{byTask: map[string][]string{}}
	postTo := func(recipient, title string) string {
		var task relay.Task
		alice.call(t, "post_task", map[string]any{"recipientSlug": recipient, "title": title, "instructions": "Do " + title + "."}, &task)
		return task.ID
	}
	post := func(title string) string { return postTo("bob", title) }
	claim := func(want string) {
		t.Helper()
		var got struct{ Task *relay.Task }
		bob.call(t, "claim_next_task", map[string]any{"waitMs": 25000}, &got)
		if got.Task == nil || got.Task.ID != want {
			st := cli(t, "mesh", "status", "--json", "--port", strconv.Itoa(ra.port), "--data-dir", ra.dir)
			t.Fatalf("bob claimed %+v; want %s\nA's mesh status: %s\nA's log:\n%s", got.Task, want, st, ra.out.String())
		}
	}
	report := func(id, kind, msg string) {
		bob.call(t, "report_task", map[string]any{"taskId": id, "kind": kind, "message": msg}, nil)
	}
	full := []string{relay.EventTaskClaimed, relay.EventTaskProgress, relay.EventTaskCompleted}

	// 1. Across relays: posted on A, claimed through B's /mcp, reported, completed.
	start := time.Now()
	id := post("plain")
	claim(id)
	report(id, "progress", "half")
	report(id, "completed", "done")
	in.await(t, alice, id, full...)
	var got relay.Task
	alice.call(t, "get_task", map[string]any{"taskId": id}, &got)
	if got.Status != relay.StatusCompleted || got.Signature != relay.MarkVerified {
		t.Fatalf("get_task on A: %s %q", got.Status, got.Signature)
	}
	t.Logf("plain lifecycle across relays: %s", time.Since(start))

	// 1b. The same with B's worker running it: a worker of dave on B (a
	// custom program, as the worker tests use) claims a task alice posted
	// on A, runs it and completes it; alice reads each update once.
	start = time.Now()
	dave := addMeshAgent(t, rb, "dave")
	awaitListed(t, alice, "dave", "relay-b")
	awaitListed(t, dave, "alice", "relay-a") // the worker takes alice's tasks: B must know her
	work := t.TempDir()
	script := filepath.Join(work, "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho 'Built on relay B by the worker.'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cli(t, "workers", "set", "dave", "--harness", "custom", "--command", script, "--workdir", work, "--allow-sender", "alice",
		"--timeout", "2m", "--port", strconv.Itoa(rb.port), "--data-dir", rb.dir)
	workerTask := postTo("dave", "by the worker")
	workerFull := []string{relay.EventTaskClaimed, relay.EventTaskCompleted}
	in.await(t, alice, workerTask, workerFull...)
	alice.call(t, "get_task", map[string]any{"taskId": workerTask}, &got)
	if got.Status != relay.StatusCompleted || got.ClaimedVia != "worker" || got.Signature != relay.MarkVerified ||
		len(got.Reports) == 0 || !strings.Contains(got.Reports[len(got.Reports)-1].Result, "Built on relay B by the worker.") {
		t.Fatalf("get_task on A of the worker's task: %s via %q, %q, reports %+v", got.Status, got.ClaimedVia, got.Signature, got.Reports)
	}
	if m := scrapeMetrics(t, rb.port); !strings.Contains(m, `crosschat_worker_runs_finished_total{outcome="completed"} 1`+"\n") {
		t.Fatalf("B's /metrics does not count the worker's run:\n%s", m)
	}
	t.Logf("worker lifecycle across relays: %s", time.Since(start))

	// 2. SIGKILL relay B mid-task, restart it.
	id = post("killed")
	claim(id)
	report(id, "progress", "before the kill")
	rb.kill()
	rb.start(t)
	report(id, "completed", "after the restart")
	in.await(t, alice, id, full...)

	// 3. Stop one NATS node (not the one A's proxy leads to).
	nodes[2].stop(t)
	id = post("one node down")
	claim(id)
	report(id, "progress", "n3 down")
	report(id, "completed", "done")
	in.await(t, alice, id, full...)
	nodes[2].start(t)

	// 4. Cut A off from NATS while alice keeps posting.
	px.set(natsA, true)
	px.cut()
	var cutIDs []string
	for i := range 3 {
		cutIDs = append(cutIDs, post("offline "+strconv.Itoa(i)))
	}
	time.Sleep(cut) // the fault itself lasts this long; nothing polls here
	px.set(natsA, false)
	for _, id := range cutIDs {
		claim(id) // in the order posted
		report(id, "progress", "after the cut")
		report(id, "completed", "done")
	}
	for _, id := range cutIDs {
		in.await(t, alice, id, full...)
	}

	// 5. Restart all of NATS; posts meanwhile wait in A's outbox.
	for _, n := range nodes {
		n.stop(t)
	}
	id = post("all down")
	for _, n := range nodes {
		n.start(t)
	}
	claim(id)
	report(id, "progress", "after the restart")
	report(id, "completed", "done")
	in.await(t, alice, id, full...)

	// Nothing extra arrives for any task.
	time.Sleep(2 * time.Second) // lets any stray duplicate land before the last read
	in.read(t, alice)
	for task, evs := range in.byTask {
		want := full
		if task == workerTask {
			want = workerFull
		}
		if strings.Join(evs, ",") != strings.Join(want, ",") {
			t.Fatalf("task %s: updates %v; want %v", task, evs, want)
		}
	}
	if len(in.byTask) != 8 {
		t.Fatalf("alice read updates for %d tasks; want 8", len(in.byTask))
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

// The default flow with real processes: relay A embeds NATS (with its
// credential), relay B joins with what `mesh invite` prints, both keep
// the default operator slug. Before B trusts A, the operator's task to bee
// waits, held; once trusted, bee claims and completes it, A's task is
// completed and A's operator reads task-claimed and task-completed once each.
func TestMeshDefaultOperatorEndToEnd(t *testing.T) {
	if os.Getenv("CROSSCHAT_E2E_MESH") == "" {
		t.Skip("set CROSSCHAT_E2E_MESH=1 (make e2e-mesh) to run the mesh with real processes")
	}
	relayBinary(t)
	embed := "127.0.0.1:" + strconv.Itoa(testkit.FreePort(t))
	ra := &meshProc{name: "relay-a", dir: t.TempDir(), port: testkit.FreePort(t), meshArgs: []string{"--nats-embed", embed, "--nats-name", "relay-a"}}
	ra.start(t)
	var inv struct{ URL, Command string }
	if err := json.Unmarshal(cli(t, append([]string{"mesh", "invite", "--json"}, ra.loc()...)...), &inv); err != nil || !strings.Contains(inv.URL, "crosschat:") {
		t.Fatalf("mesh invite: %+v %v", inv, err)
	}
	rb := &meshProc{name: "relay-b", dir: t.TempDir(), port: testkit.FreePort(t), meshArgs: []string{"--nats", inv.URL, "--nats-name", "relay-b"}}
	rb.start(t)
	bee := addMeshAgent(t, rb, "bee")
	bee.call(t, "heartbeat", map[string]any{}, nil)
	ra.trust(t, rb)

	ctx := context.Background()
	ba, bb := ra.bridge(t), rb.bridge(t)
	var task relay.Task
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ba.Call(ctx, "Tasks", "Post", &task, map[string]any{"recipientSlug": "bee", "title": "From A's operator", "instructions": "Say hi."})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("post to bee on A: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Held on B until B's operator trusts A.
	var st struct {
		Held []struct{ TaskID, Reason, Sender string }
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := json.Unmarshal(cli(t, append([]string{"mesh", "status", "--json"}, rb.loc()...)...), &st); err == nil &&
			len(st.Held) == 1 && st.Held[0].TaskID == task.ID && st.Held[0].Reason == "untrusted" && st.Held[0].Sender == "operator@relay-a" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's held envelopes: %+v", st.Held)
		}
	}
	out := string(cli(t, append([]string{"mesh", "relays"}, rb.loc()...)...))
	if !strings.Contains(out, "relay-a") || !strings.Contains(out, "pending") || !strings.Contains(out, "SHA256:") || !strings.Contains(out, task.ID) {
		t.Fatalf("mesh relays on B before trust:\n%s", out)
	}
	rb.trust(t, ra)

	var claimed struct{ Task *relay.Task }
	bee.call(t, "claim_next_task", map[string]any{"waitMs": 25000}, &claimed)
	if claimed.Task == nil || claimed.Task.ID != task.ID || claimed.Task.SenderSlug != "operator@relay-a" {
		t.Fatalf("bee claimed %+v; want %s from operator@relay-a", claimed.Task, task.ID)
	}
	bee.call(t, "report_task", map[string]any{"taskId": task.ID, "kind": "completed", "message": "Hi from B."}, nil)

	type detail struct{ Task relay.Task }
	var d detail
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := ba.Call(ctx, "Tasks", "Get", &d, task.ID); err == nil && d.Task.Status == relay.StatusCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's task: %+v\nA's log:\n%s", d.Task, ra.out.String())
		}
	}
	time.Sleep(time.Second) // lets a stray duplicate land before the count
	var evs []relay.Event
	if err := ba.Call(ctx, "Events", "List", &evs, relay.EventFilter{Agent: "operator", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].TaskID == task.ID {
			got = append(got, evs[i].Type)
		}
	}
	if strings.Join(got, ",") != relay.EventTaskClaimed+","+relay.EventTaskCompleted {
		t.Fatalf("A's operator read %v; want task-claimed and task-completed once each", got)
	}
	if err := bb.Call(ctx, "Events", "List", &evs, relay.EventFilter{Agent: "operator", Limit: 100}); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.TaskID == task.ID {
			t.Fatalf("B's own operator was told of A's operator's task: %+v", e)
		}
	}
}
