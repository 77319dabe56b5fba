package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// loopScript is a custom agent CLI that hands every task on to the next
// agent over MCP (curl, the run token, stateless tools/call) and answers
// BLOCKED: with the relay's refusal when the hand-off is refused.
const loopScript = `#!/bin/sh
cat >/dev/null
resp=$(curl -sS -X POST "$CROSSCHAT_MCP_URL" \
  -H "Authorization: Bearer $CROSSCHAT_TOKEN" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
  --data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"post_task","arguments":{"recipientSlug":"%s","title":"loop from %s","instructions":"Pass it on."}}}')
case "$resp" in
  *'"isError":true'*) echo "BLOCKED: $resp"; exit 0 ;;
esac
echo "Handed it on to %s."
`

// TestThreeAgentLoopStops runs three workers whose agents hand every task
// on in a ring (a → b → c → a → …), each run a real child process posting
// over MCP with its run token. The hand-off limit stops the loop: the run
// whose hand-off would exceed it gets chain_limit, and its task is blocked
// with that clear error, naming the limit and the conversation. Every task
// of the ring is in the first task's conversation, one hop further each.
func TestThreeAgentLoopStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker processes")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	const limit = 4
	base := t.TempDir()
	r := startRelay(t, filepath.Join(base, "data"))
	svc := r.Service()
	s, err := svc.Settings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.MaxChainDepth = limit
	if _, err := svc.UpdateSettings(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	ring := []string{"ann", "bob", "cat"}
	for _, slug := range ring {
		if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: strings.ToUpper(slug), ModelSlug: "script", Capabilities: []string{"text-output"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, slug := range ring {
		next, prev := ring[(i+1)%3], ring[(i+2)%3]
		script := filepath.Join(base, slug+".sh")
		if err := os.WriteFile(script, []byte(fmt.Sprintf(loopScript, next, slug, next)), 0o700); err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(base, "work-"+slug)
		if err := os.MkdirAll(work, 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Services.Workers.Save(relay.WorkerConfig{
			AgentSlug: slug, Harness: relay.HarnessCustom, Command: "/bin/sh", Args: []string{script}, Workdir: work,
			AllowedSenders: []string{"operator", prev}, TimeoutMinutes: 2, Enabled: true,
		}); err != nil {
			t.Fatalf("worker %s: %v", slug, err)
		}
	}
	first, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "ann", Title: "start the loop", Instructions: "Pass it on."})
	if err != nil {
		t.Fatal(err)
	}

	// Wait until no task is queued or claimed and one is blocked.
	var tasks []relay.TaskSummary
	deadline := time.Now().Add(2 * time.Minute)
	for {
		tasks, err = r.Services.Tasks.List(relay.TaskFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		busy, blocked := 0, 0
		for _, x := range tasks {
			switch x.Status {
			case relay.StatusQueued, relay.StatusClaimed:
				busy++
			case relay.StatusBlocked:
				blocked++
			}
		}
		if busy == 0 && blocked > 0 {
			break
		}
		if time.Now().After(deadline) || len(tasks) > 3*limit {
			t.Fatalf("the loop did not stop: %d tasks: %+v", len(tasks), tasks)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].Depth < tasks[j].Depth })
	if len(tasks) != limit+1 || tasks[0].ID != first.ID {
		t.Fatalf("%d tasks, want %d (depths 0..%d): %+v", len(tasks), limit+1, limit, tasks)
	}
	for i, x := range tasks {
		want := relay.StatusCompleted
		if i == limit {
			want = relay.StatusBlocked
		}
		if x.Depth != i || x.Hops != i || x.ConversationID != first.ID || x.RecipientSlug != ring[i%3] || x.Status != want {
			t.Errorf("task %d: depth %d hops %d conversation %s to %s %s, want depth and hops %d, conversation %s, to %s %s",
				i, x.Depth, x.Hops, x.ConversationID, x.RecipientSlug, x.Status, i, first.ID, ring[i%3], want)
		}
	}
	d, err := r.Services.Tasks.Get(tasks[limit].ID)
	if err != nil {
		t.Fatal(err)
	}
	last := d.Task.Reports[len(d.Task.Reports)-1]
	for _, want := range []string{"chain_limit", fmt.Sprintf("%d hand-offs away", limit+1), "conversation " + first.ID, fmt.Sprintf("the limit is %d", limit)} {
		if !strings.Contains(last.Message+last.Result, want) {
			t.Errorf("the blocked report lacks %q: %+v", want, last)
		}
	}
}
