package mcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// BenchmarkToolCall serves one plain tools/call at a time through the MCP
// handler, without a network, so that B/op and allocs/op are the relay's own
// per call: the lean path's decoding and encoding, the tool and the store
// (its writer included). Garbage per call sets how often the relay collects
// it under load.
func BenchmarkToolCall(b *testing.B) {
	cases := []struct{ name, tool, args string }{
		{"whoami", "whoami", `{}`},
		{"heartbeat", "heartbeat", `{}`},
		{"read_updates", "read_updates", `{}`},
		{"list_agents", "list_agents", `{}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			svc, tok := agentService(b, relay.CreateAgentInput{Slug: "bench-a", DisplayName: "Bench A", ModelSlug: "m", Capabilities: []string{"text-input"}})
			p, err := svc.Authenticate(context.Background(), tok)
			if err != nil {
				b.Fatal(err)
			}
			h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "bench"})
			body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":` + c.args + `}}`)
			req := benchRequest(relay.WithPrincipal(context.Background(), p))
			rd := bytes.NewReader(body)
			w := &discard{h: http.Header{}}
			serve := func() {
				rd.Reset(body)
				w.serve(h, req, rd, len(body))
			}
			serve()
			if w.status != http.StatusOK || !bytes.Contains(w.last, []byte(`"result"`)) || bytes.Contains(w.last, []byte(`"isError":true`)) {
				b.Fatalf("%s: status %d: %s", c.tool, w.status, w.last)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				serve()
			}
		})
	}
	b.Run("lifecycle", benchLifecycleCalls)
}

// benchLifecycleCalls serves the bench's lifecycle, five calls per
// iteration as two agents make them: post_task, claim_next_task, report_task
// progress and completed, read_updates. B/op is per lifecycle.
func benchLifecycleCalls(b *testing.B) {
	svc, closer := openService(b)
	b.Cleanup(func() { _ = closer.Close() })
	principal := func(slug string) context.Context {
		_, tok, err := svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
		if err != nil {
			b.Fatal(err)
		}
		p, err := svc.Authenticate(context.Background(), tok)
		if err != nil {
			b.Fatal(err)
		}
		return relay.WithPrincipal(context.Background(), p)
	}
	sender, worker := principal("bench-s"), principal("bench-w")
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "bench"})
	w := &discard{h: http.Header{}}
	reqs := map[context.Context]*http.Request{sender: benchRequest(sender), worker: benchRequest(worker)}
	call := func(ctx context.Context, tool, args string) []byte {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
		w.serve(h, reqs[ctx], strings.NewReader(body), len(body))
		if w.status != http.StatusOK || bytes.Contains(w.last, []byte(`"isError":true`)) {
			b.Fatalf("%s: status %d: %s", tool, w.status, w.last)
		}
		return w.last
	}
	taskID := func(answer []byte) string {
		_, rest, ok := bytes.Cut(answer, []byte(`\"id\":\"`))
		id, _, _ := bytes.Cut(rest, []byte(`\"`))
		if !ok || len(id) == 0 {
			b.Fatalf("no task id in %s", answer)
		}
		return string(id)
	}
	b.ReportAllocs()
	for b.Loop() {
		id := taskID(call(sender, "post_task", `{"recipientSlug":"bench-w","title":"bench task","instructions":"Claim it, report progress, complete it."}`))
		call(worker, "claim_next_task", `{"waitMs":0}`)
		call(worker, "report_task", `{"taskId":"`+id+`","kind":"progress","message":"Halfway there."}`)
		call(worker, "report_task", `{"taskId":"`+id+`","kind":"completed","message":"Done.","result":"ok"}`)
		call(sender, "read_updates", `{"limit":100}`)
	}
}

// benchRequest is a POST /mcp as the web layer hands it to the handler,
// ctx carrying the caller's principal; each call sets its body.
func benchRequest(ctx context.Context) *http.Request {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req
}

// discard is a ResponseWriter that keeps the status and the first write of
// the answer in a buffer it reuses.
type discard struct {
	h      http.Header
	status int
	last   []byte // reused, so that it adds no garbage per call
}

// serve serves req with the n bytes of body through h into d, emptied
// first.
func (d *discard) serve(h http.Handler, req *http.Request, body io.Reader, n int) {
	req.Body = io.NopCloser(body)
	req.ContentLength = int64(n)
	clear(d.h)
	d.status, d.last = 0, d.last[:0]
	h.ServeHTTP(d, req)
}

func (d *discard) Header() http.Header { return d.h }

// Flush does what net/http's does for an answer kept in memory: nothing
// fails. Without it a claim's answer counts as undelivered and its task
// goes back to the queue (delivery.go).
func (d *discard) Flush()            {}
func (d *discard) WriteHeader(s int) { d.status = s }
func (d *discard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	if len(d.last) == 0 {
		d.last = append(d.last, p...)
	}
	return len(p), nil
}

// BenchmarkLeanParse reads one report_task body as the lean path does
// before it runs the tool: the envelope checked and read, the id and the
// arguments decoded.
func BenchmarkLeanParse(b *testing.B) {
	svc, _ := agentService(b, relay.CreateAgentInput{Slug: "bench-a", DisplayName: "Bench A", ModelSlug: "m", Capabilities: []string{"text-input"}})
	h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "bench"})
	body := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"report_task","arguments":{"taskId":"01a24a77-d3d8-7be6-b4f4-40b0e0b9d176","kind":"completed","message":"Done with it, all good.","result":"ok"}}}`)
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	b.ReportAllocs()
	for b.Loop() {
		if !relaymcp.LeanServes(h, hdr, body) {
			b.Fatal("the lean path does not serve it")
		}
	}
}
