package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestLeanEncodingMatchesMCPGo: the lean path's bytes for a tools/call
// answer are exactly what mcp-go's json.Encoder writes for the same answer.
func TestLeanEncodingMatchesMCPGo(t *testing.T) {
	tricky := map[string]any{"text": "a<b>&c \u2028 \u2029 \"quoted\" \\ é 😀 \x01", "n": 1.5, "list": []string{"<x>"}, "typographic": "“quoted” → …"}
	ok1, _ := relaymcp.Success(tricky)
	ok2, _ := relaymcp.Success(struct{}{})
	wrapped, _ := relaymcp.SuccessWrapped([]string{"a&b", "</script>"}, "agents")
	empty, _ := relaymcp.SuccessWrapped([]string{}, "agents")
	fail := relaymcp.ErrorResult(relay.Errorf(relay.EInvalidRequest, "title: <b>bad</b> & \u2028").WithDetails(map[string]any{"field": "a<b"}))
	plain := relaymcp.ErrorResult(relay.Errorf(relay.EUnauthorized, "no"))
	textOnly := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("just <text>")}}
	two := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a"), mcp.NewTextContent("b")}}
	meta := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent("a")}, Result: mcp.Result{Meta: &mcp.Meta{AdditionalFields: map[string]any{"k": "v"}}}}
	results := map[string]*mcp.CallToolResult{
		"success": ok1, "empty object": ok2, "wrapped": wrapped, "empty list": empty,
		"error with details": fail, "error": plain, "text only": textOnly, "two contents": two, "meta": meta,
	}
	ids := []any{float64(1), float64(0), float64(-3), float64(7.5), float64(1e21), float64(123456789012), "abc", "", "a<b>&\u2028", "é"}
	for name, res := range results {
		for _, id := range ids {
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)); err != nil {
				t.Fatalf("%s: mcp-go encoding: %v", name, err)
			}
			got, err := relaymcp.EncodeLean(id, res)
			if err != nil {
				t.Fatalf("%s id %v: %v", name, id, err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("%s id %#v:\n got %s\nwant %s", name, id, got, want.Bytes())
			}
		}
	}
}

// leanRequest is one raw request for the comparison below.
type leanRequest struct {
	name   string
	token  string // "" sends no Authorization
	header map[string]string
	body   string
	lean   bool // the lean path serves it (else mcp-go does)
}

// TestLeanPathAnswersAsMCPGo sends the same requests to the handler and to
// the mcp-go handler behind it: status, content type and body are equal,
// byte for byte, whether the lean path or mcp-go serves the request.
func TestLeanPathAnswersAsMCPGo(t *testing.T) {
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "lean-a", DisplayName: "Lean <A>", ModelSlug: "m", Capabilities: []string{"text-input"}})
	ctx := context.Background()
	if _, _, err := svc.CreateAgent(ctx, relay.CreateAgentInput{Slug: "lean-b", DisplayName: "B & co", ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
		t.Fatal(err)
	}
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: testLogger(t)})
	lib := relaymcp.LibraryHandler(h)

	call := func(id, name, args string) string {
		s := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `"`
		if args != "" {
			s += `,"arguments":` + args
		}
		return s + "}}"
	}
	const unknownTask = `"00000000-0000-4000-8000-000000000000"`
	reqs := []leanRequest{
		{name: "whoami", token: tok, body: call("1", "whoami", `{}`), lean: true},
		{name: "string id with HTML", token: tok, body: call(`"a<b>&c"`, "whoami", `{}`), lean: true},
		{name: "fractional id", token: tok, body: call("7.5", "list_agents", `{}`), lean: true},
		{name: "big id", token: tok, body: call("12345678901234567890", "whoami", ``), lean: true},
		{name: "no arguments", token: tok, body: call("2", "list_agents", ``), lean: true},
		{name: "null arguments", token: tok, body: call("3", "whoami", `null`), lean: true},
		{name: "array arguments", token: tok, body: call("4", "whoami", `[]`), lean: true},
		{name: "unknown task", token: adminToken, body: call("5", "get_task", `{"requesterSlug":"lean-a","taskId":`+unknownTask+`}`), lean: true},
		{name: "bad task id", token: tok, body: call("6", "get_task", `{"taskId":"<nope>"}`), lean: true},
		{name: "wrong type", token: tok, body: call("7", "post_task", `{"recipientSlug":"lean-b","title":"t","instructions":"i","priority":"x"}`), lean: true},
		{name: "identity mismatch", token: tok, body: call("8", "claim_next_task", `{"recipientSlug":"lean-b"}`), lean: true},
		{name: "slug required", token: adminToken, body: call("9", "whoami", `{}`), lean: true},
		{name: "no principal", body: call("10", "whoami", `{}`), lean: true},
		{name: "whitespace around", token: tok, body: " \n" + call("11", "whoami", `{ }`) + "\r\n\t", lean: true},
		{name: "old protocol header", token: tok, header: map[string]string{"MCP-Protocol-Version": "2025-06-18"}, body: call("12", "whoami", `{}`), lean: true},
		{name: "content type with charset", token: tok, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, body: call("13", "whoami", `{}`), lean: true},
		{name: "escaped envelope strings", token: tok, body: `{"jsonrpc":"2\u002e0","id":"\u0031","method":"tools\/call","params":{"name":"who\u0061mi"}}`, lean: true},
		{name: "escaped argument key", token: adminToken, body: call("14", "whoami", `{"\u0061gentSlug":"lean-b"}`), lean: true},
		{name: "repeated argument key", token: adminToken, body: call("15", "whoami", `{"agentSlug":"nobody","agentSlug":"lean-b"}`), lean: true},
		{name: "argument key not UTF-8", token: tok, body: call("16", "whoami", "{\"\xff\":1}"), lean: true},
		{name: "string id with escapes", token: tok, body: call(`"\ud83d\ude00\n"`, "whoami", `{}`), lean: true},
		{name: "negative exponent id", token: tok, body: call("-1.5e-3", "whoami", `{}`), lean: true},

		{name: "huge number in arguments", token: tok, body: call("20", "whoami", `{"x":1e400}`)},
		{name: "tools/list", token: tok, body: `{"jsonrpc":"2.0","id":21,"method":"tools/list"}`},
		{name: "ping", token: tok, body: `{"jsonrpc":"2.0","id":22,"method":"ping"}`},
		{name: "unknown tool", token: tok, body: call("23", "no_such_tool", `{}`)},
		{name: "meta", token: tok, body: `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"whoami","_meta":{"progressToken":1}}}`},
		{name: "extra top-level field", token: tok, body: `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"whoami"},"x":1}`},
		{name: "null id", token: tok, body: call("null", "whoami", `{}`)},
		{name: "object id", token: tok, body: call(`{"a":1}`, "whoami", `{}`)},
		{name: "no id", token: tok, body: `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"whoami"}}`},
		{name: "wrong jsonrpc", token: tok, body: `{"jsonrpc":"1.0","id":26,"method":"tools/call","params":{"name":"whoami"}}`},
		{name: "trailing garbage", token: tok, body: call("27", "whoami", `{}`) + "x"},
		{name: "not JSON", token: tok, body: `{"jsonrpc":`},
		{name: "unsupported protocol header", token: tok, header: map[string]string{"MCP-Protocol-Version": "1999-01-01"}, body: call("28", "whoami", `{}`)},
		{name: "text/plain", token: tok, header: map[string]string{"Content-Type": "text/plain"}, body: call("29", "whoami", `{}`)},
		{name: "repeated params", token: tok, body: `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"name":"whoami"},"params":{"name":"list_agents"}}`},
		{name: "repeated name", token: tok, body: `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"list_agents","name":"whoami"}}`},
		{name: "number name", token: tok, body: `{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":1}}`},
		{name: "id beyond float64", token: tok, body: call("1e400", "whoami", `{}`)},
	}
	for _, rq := range reqs {
		t.Run(rq.name, func(t *testing.T) {
			hdr := http.Header{}
			hdr.Set("Content-Type", "application/json")
			for k, v := range rq.header {
				hdr.Set(k, v)
			}
			if got := relaymcp.LeanServes(h, hdr, []byte(rq.body)); got != rq.lean {
				t.Fatalf("lean path serves it: %v, want %v", got, rq.lean)
			}
			serve := func(handler http.Handler) *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(rq.body))
				r.Header = hdr.Clone()
				if rq.token != "" {
					r.Header.Set("Authorization", "Bearer "+rq.token)
				}
				w := httptest.NewRecorder()
				withAuth(svc, handler).ServeHTTP(w, r)
				return w
			}
			want, got := serve(lib), serve(h)
			if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || got.Body.String() != want.Body.String() {
				t.Errorf("answers differ:\n got %d %q %s\nwant %d %q %s", got.Code, got.Header().Get("Content-Type"), got.Body,
					want.Code, want.Header().Get("Content-Type"), want.Body)
			}
		})
	}
}

// TestCancelledNotificationEndsLeanCall: notifications/cancelled for a
// waiting claim_next_task's id ends it (it answers idle) when the same
// caller sends it, and not when another agent does.
func TestCancelledNotificationEndsLeanCall(t *testing.T) {
	e := newEnv(t)
	tokA, tokB := e.agent("cancel-a"), e.agent("cancel-b")
	post := func(token, body string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, e.url(), strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultClient.Do(req)
	}
	type answer struct {
		body string
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := post(tokA, `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20000}}}`)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		done <- answer{body: b.String(), err: err}
	}()
	eventually(t, 10*time.Second, "claim waiting", func() bool { return e.svc.claims.Load() == 1 })

	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":41,"reason":"user"}}`
	for _, tok := range []string{tokB, tokA} {
		resp, err := post(tok, cancel)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notification: HTTP %d, want 202", resp.StatusCode)
		}
		if tok == tokB {
			// Another agent's cancel must leave the claim waiting.
			select {
			case a := <-done:
				t.Fatalf("claim ended on another agent's cancel: %+v", a)
			default:
			}
			if n := e.svc.claims.Load(); n != 1 {
				t.Fatalf("claims waiting after another agent's cancel: %d", n)
			}
		}
	}
	select {
	case a := <-done:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !strings.Contains(a.body, `{\"status\":\"idle\"}`) || !strings.Contains(a.body, `"id":41`) {
			t.Fatalf("cancelled claim answered %s, want idle for id 41", a.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled claim did not answer")
	}
}

// FuzzLeanEnvelope sends arbitrary request bodies to the handler and to the
// mcp-go handler behind it. A body the lean path takes must name a tool, and
// for the tools that change nothing (whoami, list_agents) both answers must
// be the same bytes (a body it refuses goes to mcp-go in both). Nothing may
// panic.
func FuzzLeanEnvelope(f *testing.F) {
	svc, tok := agentService(f, relay.CreateAgentInput{Slug: "fuzz-lean", DisplayName: "F", ModelSlug: "m", Capabilities: []string{"text-input"}})
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: slog.New(slog.DiscardHandler)})
	lib := relaymcp.LibraryHandler(h)
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"x<y","method":"tools/call","params":{"name":"list_agents"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"whoami","arguments":{"a":[1,2e9,"\u2028"]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{"x":1e400}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","_meta":{}}}`,
		`{"JSONRPC":"2.0","ID":4,"Method":"tools/call","Params":{"Name":"whoami"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami","name":"list_agents"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		hdr := http.Header{}
		hdr.Set("Content-Type", "application/json")
		lean := relaymcp.LeanServes(h, hdr, []byte(body))
		var env struct {
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if !lean {
			return // mcp-go serves it in both
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil {
			t.Fatalf("lean path took a body encoding/json refuses: %v", err)
		}
		if env.Params.Name != "whoami" && env.Params.Name != "list_agents" {
			return // a tool that writes: its answers differ by ids and times
		}
		serve := func(handler http.Handler) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header = hdr.Clone()
			r.Header.Set("Authorization", "Bearer "+tok)
			w := httptest.NewRecorder()
			withAuth(svc, handler).ServeHTTP(w, r)
			return w
		}
		want, got := serve(lib), serve(h)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Fatalf("answers differ for %q:\n got %d %s\nwant %d %s", body, got.Code, got.Body, want.Code, want.Body)
		}
	})
}

// countingObserver counts the tool calls it is told about.
type countingObserver struct {
	mu                     sync.Mutex
	started, ended, failed map[string]int
	finished               int
}

func (o *countingObserver) ToolStarted(tool string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started[tool]++
}

func (o *countingObserver) ToolFinished(tool string, _ time.Duration, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished++
	o.ended[tool]++
	if failed {
		o.failed[tool]++
	}
}

// inFlight is how many calls of tool have started and not finished.
func (o *countingObserver) inFlight(tool string) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return int64(o.started[tool] - o.ended[tool])
}

// TestLeanPathReportsToObserver: calls the lean path serves reach the tool
// observer (metrics) as mcp-go's do, failures marked.
func TestLeanPathReportsToObserver(t *testing.T) {
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "obs-a", DisplayName: "A", ModelSlug: "m", Capabilities: []string{"text-input"}})
	o := &countingObserver{started: map[string]int{}, ended: map[string]int{}, failed: map[string]int{}}
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: testLogger(t), Observer: o})
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_task","arguments":{"taskId":"nope"}}}`,
	} {
		hdr := http.Header{"Content-Type": {"application/json"}}
		if !relaymcp.LeanServes(h, hdr, []byte(body)) {
			t.Fatalf("lean path does not serve %s", body)
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header = hdr
		r.Header.Set("Authorization", "Bearer "+tok)
		withAuth(svc, h).ServeHTTP(httptest.NewRecorder(), r)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started["whoami"] != 1 || o.started["get_task"] != 1 || o.finished != 2 || o.failed["get_task"] != 1 || o.failed["whoami"] != 0 {
		t.Fatalf("observer saw started %v, finished %d, failed %v", o.started, o.finished, o.failed)
	}
}

// readBody is a body read whole already, as the web layer hands it over:
// Bytes gives it, and reading it fails, so that a handler that read a
// copy instead would answer an error.
type readBody struct{ b []byte }

func (r readBody) Read([]byte) (int, error) { return 0, errors.New("read again") }
func (r readBody) Close() error             { return nil }
func (r readBody) Bytes() []byte            { return r.b }

// TestLeanPathUsesTheBodyAsRead: a body that was read whole already
// (relaymcp.ReadBody) is served from its bytes, not read a second time.
func TestLeanPathUsesTheBodyAsRead(t *testing.T) {
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "lean-a", DisplayName: "Lean A", ModelSlug: "m", Capabilities: []string{"text-input"}})
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: testLogger(t)})
	var body relaymcp.ReadBody = readBody{[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)}
	r := httptest.NewRequest(http.MethodPost, "/mcp", body)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	withAuth(svc, h).ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `lean-a`) || strings.Contains(rec.Body.String(), `"isError":true`) {
		t.Fatalf("HTTP %d %s; want whoami's answer", rec.Code, rec.Body.String())
	}
}
