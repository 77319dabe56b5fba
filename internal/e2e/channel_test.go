package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// relayTools are the relay's 14 tools, which the channel serves by proxy.
var relayTools = []string{"cancel_task", "claim_next_task", "get_task", "heartbeat", "list_agents", "post_task",
	"read_updates", "register_agent", "release_task", "renew_task_lease", "report_task", "request_changes",
	"requeue_task", "whoami"}

// channelNotes collects the channel notifications a client received.
type channelNotes struct {
	mu    sync.Mutex
	notes []map[string]any
}

func (c *channelNotes) add(n mcp.JSONRPCNotification) {
	if n.Method != "notifications/claude/channel" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, n.Params.AdditionalFields)
}

func (c *channelNotes) get() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.notes...)
}

// TestChannelServer runs `crosschat-relay channel` as Claude Code would
// (a stdio child process) under mcp-go's client: it declares the
// claude/channel capability, serves the relay's 14 tools by proxy, and
// sends one notifications/claude/channel per task or update, in order.
func TestChannelServer(t *testing.T) {
	p, dataDir := childRelay(t)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	c := bench.NewClient(p.url, 2)
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	cl, err := mcpclient.NewStdioMCPClientWithOptions(relayBinary(t), childEnv(),
		[]string{"channel", "--token", bob.token, "--url", p.url + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	notes := &channelNotes{}
	cl.OnNotification(notes.add)
	if err := cl.Start(ctx); err != nil { // routes notifications to the handler
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18" // what Claude Code sends today: the classic handshake
	init.Params.ClientInfo = mcp.Implementation{Name: "claude-code", Version: "test"}
	res, err := cl.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if _, ok := res.Capabilities.Experimental["claude/channel"]; !ok {
		t.Fatalf("capabilities %+v lack experimental claude/channel", res.Capabilities)
	}
	if !strings.Contains(res.Instructions, "claim_next_task") {
		t.Errorf("instructions %q do not say what to do with a task", res.Instructions)
	}

	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Annotations.ReadOnlyHint == nil || tool.Annotations.DestructiveHint == nil {
			t.Errorf("tool %s lost its annotations through the proxy", tool.Name)
		}
	}
	sort.Strings(names)
	if strings.Join(names, ",") != strings.Join(relayTools, ",") {
		t.Fatalf("channel tools %v, want %v", names, relayTools)
	}
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		var req mcp.CallToolRequest
		req.Params.Name, req.Params.Arguments = name, args
		r, err := cl.CallTool(ctx, req)
		if err != nil || r.IsError {
			t.Fatalf("%s through the channel: %v %+v", name, err, r)
		}
		b, _ := json.Marshal(r.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v (%s)", name, err, b)
		}
	}
	var me struct {
		Agent relay.Agent `json:"agent"`
	}
	call("whoami", nil, &me)
	if me.Agent.Slug != "bob" {
		t.Fatalf("whoami through the channel = %+v, want bob", me)
	}

	// Alice sends bob a task: a channel event, with no request from the client.
	var t1 relay.Task
	if err := c.Tool(ctx, alice.token, "post_task", map[string]any{"recipientSlug": "bob", "title": "Review the parser", "instructions": "Check the error paths.", "priority": 3}, &t1); err != nil {
		t.Fatal(err)
	}
	dump := func() string {
		out := fmt.Sprint(notes.get())
		if r, ok := mcpclient.GetStderr(cl); ok {
			b := make([]byte, 64<<10)
			n, _ := r.Read(b)
			out += "\nchannel stderr:\n" + string(b[:n])
		}
		return out
	}
	waitFor(t, "the task's channel event", func() bool { return len(notes.get()) >= 1 }, dump)
	// Bob acts through the channel's tools; bob also sends alice a task she completes.
	var claimed claimAnswer
	call("claim_next_task", map[string]any{}, &claimed)
	if claimed.Task == nil || claimed.Task.ID != t1.ID {
		t.Fatalf("claim through the channel = %+v", claimed)
	}
	var t2 relay.Task
	call("post_task", map[string]any{"recipientSlug": "alice", "title": "Write the changelog", "instructions": "One paragraph."}, &t2)
	var got claimAnswer
	if err := c.Tool(ctx, alice.token, "claim_next_task", map[string]any{}, &got); err != nil || got.Task == nil {
		t.Fatalf("alice claim: %+v %v", got, err)
	}
	if err := c.Tool(ctx, alice.token, "report_task", map[string]any{"taskId": t2.ID, "kind": "completed", "message": "Written.", "result": "Changelog text."}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three channel events", func() bool { return len(notes.get()) >= 3 }, dump)
	time.Sleep(200 * time.Millisecond) // a duplicate would show up here; not an assertion of timing

	want := []struct{ taskID, kind, sender, words string }{
		{t1.ID, "task", "alice", "New task from alice (priority high): “Review the parser”\n\nCheck the error paths."},
		{t2.ID, relay.EventTaskClaimed, "alice", "Update on the task “Write the changelog” (task-claimed)"},
		{t2.ID, relay.EventTaskCompleted, "alice", "Update on the task “Write the changelog” (task-completed), from alice: alice: Written."},
	}
	got3 := notes.get()
	if len(got3) != len(want) {
		t.Fatalf("%d channel events, want %d: %v", len(got3), len(want), got3)
	}
	for i, w := range want {
		content, _ := got3[i]["content"].(string)
		meta, _ := got3[i]["meta"].(map[string]any)
		// Each task here starts its own conversation: its id.
		if !strings.HasPrefix(content, w.words) || meta["task_id"] != w.taskID || meta["kind"] != w.kind || meta["sender"] != w.sender ||
			meta["conversation_id"] != w.taskID {
			t.Errorf("event %d = %q %v, want %q with task_id and conversation_id %s kind %s sender %s", i, content, meta, w.words, w.taskID, w.kind, w.sender)
		}
	}
}
