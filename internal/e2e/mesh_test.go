package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

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
	awaitJetStream(t, nodes)
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
