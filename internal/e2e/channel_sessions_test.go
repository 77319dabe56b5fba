package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

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

// TestChannelSessionsGetTheirOwnReplies: two live sessions of one agent,
// each with its own `crosschat-relay channel` (Claude Code's
// CLAUDE_CODE_SESSION_ID in its environment), and a monitor started with
// --session for the second. A task the first session posts is answered,
// and only the first session receives its updates; a task the agent posts
// without a session reaches every session, as before; read_updates shows
// the agent everything.
func TestChannelSessionsGetTheirOwnReplies(t *testing.T) {
	p, dataDir := childRelay(t)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := bench.NewClient(p.url, 2)
	defer c.Close()

	one := startSessionChannel(ctx, t, p, alice.token, "sess-one")
	two := startSessionChannel(ctx, t, p, alice.token, "sess-two")
	mon := startMonitorIn(t, append(childEnv(), "CROSSCHAT_TOKEN="+alice.token), t.TempDir(), "--url", p.url, "--after", "0", "--session", "sess-two")
	dump := func() string {
		return fmt.Sprintf("session one: %s\nsession two: %s\nmonitor (sess-two): %v\n%s", one.dump(), two.dump(), mon.snapshot(), mon.stderr.String())
	}

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
	p, dataDir := childRelay(t)
	alice := addAgent(t, p, dataDir, "alice")
	bob := addAgent(t, p, dataDir, "bob")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
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
