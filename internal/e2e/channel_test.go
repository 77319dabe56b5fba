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
	"github.com/crosschat/crosschat-relay/internal/testkit"
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
	ctx, p, alice, bob := aliceAndBob(t)
	c := bench.NewClient(p.url, 2)
	defer c.Close()

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

// sessionChannel is one `crosschat-relay channel` child process serving a
// live session, as Claude Code starts it (CLAUDE_CODE_SESSION_ID in its
// environment), under mcp-go's stdio client.
type sessionChannel struct {
	t      *testing.T
	cl     *mcpclient.Client
	notes  *channelNotes
	stderr *testkit.Buffer
}

// startSessionChannel starts the channel for token's agent in session id,
// from the first event on (--after 0), and finishes the handshake.
func startSessionChannel(ctx context.Context, t *testing.T, p *relayProc, token, session string) *sessionChannel {
	t.Helper()
	env := append(childEnv(), "CROSSCHAT_TOKEN="+token, "CROSSCHAT_URL="+p.url, "CLAUDE_CODE_SESSION_ID="+session, "CLAUDE_CODE_SESSION_NAME=")
	cl, err := mcpclient.NewStdioMCPClientWithOptions(relayBinary(t), env, []string{"channel", "--after", "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	c := &sessionChannel{t: t, cl: cl, notes: &channelNotes{}, stderr: &testkit.Buffer{}}
	cl.OnNotification(c.notes.add)
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if r, ok := mcpclient.GetStderr(cl); ok {
		go func() {
			b := make([]byte, 4096)
			for {
				n, err := r.Read(b)
				c.stderr.Write(b[:n])
				if err != nil {
					return
				}
			}
		}()
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-06-18"
	init.Params.ClientInfo = mcp.Implementation{Name: "claude-code", Version: "test"}
	if _, err := cl.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if _, err := cl.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	// The agent's push events are written from the moment a stream of it
	// is open: wait for this one.
	waitFor(t, "the channel's push stream", func() bool { return strings.Contains(c.stderr.String(), "push stream: connected after") }, c.dump)
	return c
}

// call runs a relay tool through the channel: the answer's structured
// content decoded into out, or the relay's refusal.
func (c *sessionChannel) call(ctx context.Context, name string, args map[string]any, out any) error {
	c.t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = name, args
	r, err := c.cl.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s through the channel: %w", name, err)
	}
	if r.IsError {
		var re relay.Error
		for _, content := range r.Content {
			if text, ok := content.(mcp.TextContent); ok && json.Unmarshal([]byte(text.Text), &re) == nil && re.Code != "" {
				return &re
			}
		}
		return fmt.Errorf("%s through the channel: error result %+v", name, r.Content)
	}
	b, _ := json.Marshal(r.StructuredContent)
	return json.Unmarshal(b, out)
}

// events are the channel's notifications as "task id kind".
func (c *sessionChannel) events() []string {
	var out []string
	for _, n := range c.notes.get() {
		meta, _ := n["meta"].(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", meta["task_id"], meta["kind"]))
	}
	return out
}

func (c *sessionChannel) dump() string {
	return fmt.Sprintf("events %v\nchannel stderr:\n%s", c.events(), c.stderr.String())
}

// has reports whether the channel received event ("task id kind").
func (c *sessionChannel) has(event string) bool {
	for _, e := range c.events() {
		if e == event {
			return true
		}
	}
	return false
}

// aliceAndBob starts a relay child process with the agents alice and bob,
// and a context that ends after two minutes.
func aliceAndBob(t *testing.T) (context.Context, *relayProc, testAgent, testAgent) {
	t.Helper()
	p, dataDir := childRelay(t)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx, p, alice, bob
}

// TestChannelSessionsGetTheirOwnReplies: two live sessions of one agent,
// each with its own `crosschat-relay channel` (Claude Code's
// CLAUDE_CODE_SESSION_ID in its environment), and a monitor started with
// --session for the second. A task the first session posts is answered,
// and only the first session receives its updates; a task the agent posts
// without a session reaches every session, as before; read_updates shows
// the agent everything.
func TestChannelSessionsGetTheirOwnReplies(t *testing.T) {
	ctx, p, alice, bob := aliceAndBob(t)
	c := bench.NewClient(p.url, 2)
	defer c.Close()

	one := startSessionChannel(ctx, t, p, alice.token, "sess-one")
	two := startSessionChannel(ctx, t, p, alice.token, "sess-two")
	mon := startMonitorIn(t, append(childEnv(), "CROSSCHAT_TOKEN="+alice.token), t.TempDir(), "--url", p.url, "--after", "0", "--session", "sess-two")
	dump := func() string {
		return fmt.Sprintf("session one: %s\nsession two: %s\nmonitor (sess-two): %v\n%s", one.dump(), two.dump(), mon.snapshot(), mon.stderr.String())
	}
	waitFor(t, "the monitor's push stream", func() bool { return strings.Contains(mon.stderr.String(), "push stream: connected after") }, dump)

	// Session one asks bob; bob answers.
	var asked relay.Task
	if err := one.call(ctx, "post_task", map[string]any{"recipientSlug": "bob", "title": "Check the build", "instructions": "Is main green?"}, &asked); err != nil {
		t.Fatal(err)
	}
	if asked.ReplySession != "sess-one" {
		t.Fatalf("the task posted through session one has replySession %q, want sess-one", asked.ReplySession)
	}
	answer := func(id string) {
		t.Helper()
		var got claimAnswer
		if err := c.Tool(ctx, bob.token, "claim_next_task", map[string]any{}, &got); err != nil || got.Task == nil || got.Task.ID != id {
			t.Fatalf("bob's claim: %+v %v, want %s", got, err, id)
		}
		if err := c.Tool(ctx, bob.token, "report_task", map[string]any{"taskId": id, "kind": "completed", "message": "Green.", "result": "All green."}, nil); err != nil {
			t.Fatal(err)
		}
	}
	answer(asked.ID)
	waitFor(t, "session one to receive the answer", func() bool { return one.has(asked.ID + " " + relay.EventTaskCompleted) }, dump)

	// The agent asks without a session: every session hears of it.
	var plain relay.Task
	if err := c.Tool(ctx, alice.token, "post_task", map[string]any{"recipientSlug": "bob", "title": "Tag the release", "instructions": "v1.2.0"}, &plain); err != nil {
		t.Fatal(err)
	}
	if plain.ReplySession != "" {
		t.Fatalf("a task posted without a session has replySession %q", plain.ReplySession)
	}
	answer(plain.ID)
	done := plain.ID + " " + relay.EventTaskCompleted
	waitFor(t, "every session to receive the session-less task's answer", func() bool {
		lines := mon.snapshot()
		return one.has(done) && two.has(done) && len(lines) >= 2 && strings.Contains(lines[len(lines)-1], plain.ID)
	}, dump)

	// Push events arrive in order: had session two been sent the first
	// task's updates, they would have come before these.
	wantTwo := []string{plain.ID + " " + relay.EventTaskClaimed, done}
	if got := two.events(); strings.Join(got, ",") != strings.Join(wantTwo, ",") {
		t.Fatalf("session two received %v, want only %v\n%s", got, wantTwo, dump())
	}
	if got := one.events(); len(got) != 4 {
		t.Fatalf("session one received %v, want its task's and the session-less task's claim and completion", got)
	}
	for _, line := range mon.snapshot() {
		if strings.Contains(line, asked.ID) {
			t.Fatalf("the monitor of session two printed %q, an update on session one's task", line)
		}
	}
	var updates relay.Updates
	if err := c.Tool(ctx, alice.token, "read_updates", map[string]any{}, &updates); err != nil {
		t.Fatal(err)
	}
	if len(updates.Updates) != 4 {
		t.Fatalf("read_updates shows %d updates, want all 4: %+v", len(updates.Updates), updates.Updates)
	}
}

// TestLiveChatsStopAtHopLimit: two live chats (alice's and bob's sessions,
// each through its own channel) hand work to each other as their channel
// events arrive: each claims the task it was sent and posts one back,
// never passing parentTaskId. Each post continues the conversation of the
// task its session is handling, so the hand-off limit stops the loop, with
// a message that says why.
func TestLiveChatsStopAtHopLimit(t *testing.T) {
	ctx, p, alice, bob := aliceAndBob(t)
	chats := map[string]*sessionChannel{
		"alice": startSessionChannel(ctx, t, p, alice.token, "alice-chat"),
		"bob":   startSessionChannel(ctx, t, p, bob.token, "bob-chat"),
	}
	var first relay.Task
	if err := chats["alice"].call(ctx, "post_task", map[string]any{"recipientSlug": "bob", "title": "ping 0", "instructions": "Pass it on."}, &first); err != nil {
		t.Fatal(err)
	}
	task := first
	limit := relay.DefaultChainLimit
	for hop := 1; hop <= limit+1; hop++ {
		holder, other := task.RecipientSlug, task.SenderSlug
		chat := chats[holder]
		waitFor(t, fmt.Sprintf("%s's chat to receive hand-off %d", holder, hop-1), func() bool { return chat.has(task.ID + " task") }, chat.dump)
		var claimed claimAnswer
		if err := chat.call(ctx, "claim_next_task", map[string]any{}, &claimed); err != nil || claimed.Task == nil || claimed.Task.ID != task.ID {
			t.Fatalf("%s's claim: %+v %v, want %s", holder, claimed, err, task.ID)
		}
		var next relay.Task
		err := chat.call(ctx, "post_task", map[string]any{"recipientSlug": other, "title": fmt.Sprintf("ping %d", hop), "instructions": "Pass it on."}, &next)
		if hop <= limit {
			if err != nil {
				t.Fatalf("hand-off %d (limit %d): %v", hop, limit, err)
			}
			if next.ParentTaskID != task.ID || next.ConversationID != first.ID || next.Hops != hop {
				t.Fatalf("hand-off %d: parent %s conversation %s hops %d; want %s, %s, %d", hop, next.ParentTaskID, next.ConversationID, next.Hops, task.ID, first.ID, hop)
			}
			task = next
			continue
		}
		if relay.ErrorCode(err) != relay.EChainLimit {
			t.Fatalf("hand-off %d past the limit %d: %v, want chain_limit", hop, limit, err)
		}
		msg := relay.ErrorMessage(err)
		for _, want := range []string{
			"This session is working on the task " + task.ID,
			fmt.Sprintf("This task would be %d hand-offs away from the person who started the work (conversation %s), and the limit is %d.", hop, first.ID, limit),
			"Do the work yourself, or answer BLOCKED:",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("the refusal %q lacks %q", msg, want)
			}
		}
		t.Logf("hand-off %d refused: %s", hop, msg)
		// A reply costs no hop: the chat can still answer the task it holds.
		if err := chat.call(ctx, "report_task", map[string]any{"taskId": task.ID, "kind": "completed", "message": "Done here.", "result": "Stopped."}, &relay.Task{}); err != nil {
			t.Fatalf("report after the refusal: %v", err)
		}
		return
	}
}
