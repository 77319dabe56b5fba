package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// toolNames are the tools the fuzzer calls, indexed by its first input.
var toolNames = []string{
	"whoami", "register_agent", "list_agents", "heartbeat", "post_task",
	"claim_next_task", "renew_task_lease", "report_task", "release_task",
	"read_updates", "get_task", "cancel_task", "requeue_task", "request_changes",
}

// noWait answers claims at once, so a fuzzed waitMs never stalls the fuzzer.
type noWait struct{ relay.Service }

func (n noWait) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	in.Wait = 0
	return n.Service.ClaimNext(ctx, in)
}

// FuzzToolArguments sends arbitrary JSON arguments to every tool through
// the real handler (in process, over HTTP) and checks that each call answers
// with a tool result: a success, or an error whose text is the JSON envelope
// with a non-empty code. A wrong argument must never panic, fail the
// JSON-RPC request, or surface as internal_error.
func FuzzToolArguments(f *testing.F) {
	svc, closer := openService(f)
	f.Cleanup(func() { _ = closer.Close() })
	ctx := context.Background()
	for _, slug := range []string{"alice", "bob"} {
		if _, _, err := svc.CreateAgent(ctx, relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
			f.Fatalf("create %s: %v", slug, err)
		}
	}
	task, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t", Instructions: "i"})
	if err != nil {
		f.Fatalf("post: %v", err)
	}
	h := relaymcp.NewHandler(noWait{svc}, relaymcp.Options{Version: "fuzz", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})

	id := task.ID
	seeds := []struct {
		tool uint8
		args string
	}{
		{0, `{}`},
		{0, `null`},
		{0, `[1,2]`},
		{1, `{"displayName":"A","modelSlug":"m","capabilities":["text-input"],"details":"x"}`},
		{1, `{"slug":"ALICE ","displayName":" ","modelSlug":"m","capabilities":[]}`},
		{1, `{"displayName":"A","modelSlug":"m","capabilities":[1,{"a":2}]}`},
		{2, `{"includeOffline":true}`},
		{2, `{"includeOffline":"true"}`},
		{3, `{"agentSlug":"bob"}`},
		{3, `{"agentSlug":null}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","priority":3,"requiredCapabilities":["text-input"]}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","priority":2.0000001}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","parentTaskId":"` + id + `"}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","priority":1e400}`},
		{4, `{"recipientSlug":"alice","title":"t","instructions":"i"}`},
		{4, `{"recipientSlug":"alice","title":"t","instructions":"i","targetSession":"my session"}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","targetSession":"a\u0000b\nc"}`},
		{4, `{"recipientSlug":"bob","title":"t","instructions":"i","targetSession":7}`},
		{5, `{"waitMs":25000,"leaseSeconds":60}`},
		{5, `{"waitMs":-0,"leaseSeconds":9223372036854775808}`},
		{5, `{"waitMs":1e-400}`},
		{6, `{"taskId":"` + id + `","leaseSeconds":86400}`},
		{7, `{"taskId":"` + id + `","kind":"completed","message":"m","result":""}`},
		{7, `{"taskId":"` + strings.ToUpper(id) + `","kind":"blocked","message":"m"}`},
		{8, `{"taskId":"` + id + `","reason":"r"}`},
		{9, `{"limit":100}`},
		{9, `{"limit":"25"}`},
		{10, `{"taskId":"` + id + `"}`},
		{10, `{"taskId":["x"]}`},
		{11, `{"taskId":"` + id + `","reason":"r"}`},
		{12, `{"taskId":"` + id + `","note":"n"}`},
		{13, `{"taskId":"` + id + `","note":"n","senderSlug":"alice"}`},
		{0x80 | 13, `{"taskId":"` + id + `","note":"n"}`},
		{0x80 | 4, `{"senderSlug":"alice","recipientSlug":"bob","title":"t","instructions":"i"}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, s.args)
	}

	f.Fuzz(func(t *testing.T, tool uint8, args string) {
		if !json.Valid([]byte(args)) {
			t.Skip("the JSON-RPC message itself would be malformed")
		}
		name := toolNames[int(tool&0x7f)%len(toolNames)]
		p := relay.Principal{Kind: relay.PrincipalAgent, Slug: "alice"}
		if tool&0x80 != 0 {
			p = relay.Admin
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req = req.WithContext(relay.WithPrincipal(req.Context(), p))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		resp := decodeRPC(t, rec.Body)
		var probe any
		if json.Unmarshal([]byte(args), &probe) != nil {
			// Valid JSON that Go cannot hold (a number beyond float64, e.g.
			// 1e400): mcp-go refuses the message before any tool runs, with
			// a JSON-RPC error, which clients treat as a failed call.
			if resp == nil || resp["error"] == nil {
				t.Fatalf("%s %s: want a JSON-RPC error, got %v", name, args, resp)
			}
			return
		}
		if resp == nil || resp["result"] == nil {
			t.Fatalf("%s %s: no tool result: status %d, %v", name, args, rec.Code, resp)
		}
		b, _ := json.Marshal(resp["result"])
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("%s %s: result %s: %v", name, args, b, err)
		}
		if len(res.Content) != 1 || res.Content[0].Type != "text" {
			t.Fatalf("%s %s: content %s", name, args, b)
		}
		if len(res.StructuredContent) == 0 || res.StructuredContent[0] != '{' {
			t.Fatalf("%s %s: structuredContent is not an object: %s", name, args, b)
		}
		text := res.Content[0].Text
		if !res.IsError {
			if !json.Valid([]byte(text)) {
				t.Fatalf("%s %s: success text is not JSON: %s", name, args, text)
			}
			return
		}
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal([]byte(text), &e); err != nil || e.Error == "" || e.Message == "" {
			t.Fatalf("%s %s: error text is not the envelope: %s", name, args, text)
		}
		if e.Error == relay.EInternal {
			t.Fatalf("%s %s: internal_error for a bad argument: %s", name, args, text)
		}
	})
}
