package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestMayWait: only a claim_next_task with a plain integer waitMs in range
// is parked; anything else is served by net/http as before.
func TestMayWait(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		want       bool
	}{
		{"claim_next_task", `{"waitMs":1}`, true},
		{"claim_next_task", `{"waitMs":25000,"leaseSeconds":60}`, true},
		{"claim_next_task", `{"recipientSlug":"bob","waitMs":20000}`, true},
		{"claim_next_task", `{"waitMs":0}`, false},
		{"claim_next_task", `{"waitMs":25001}`, false},
		{"claim_next_task", `{"waitMs":-5}`, false},
		{"claim_next_task", `{"waitMs":"100"}`, false},
		{"claim_next_task", `{"waitMs":1.5}`, false},
		{"claim_next_task", `{"waitMs":1e3}`, false},
		{"claim_next_task", `{"waitMs":null}`, false},
		{"claim_next_task", `{}`, false},
		{"claim_next_task", ``, false},
		{"claim_next_task", `[1]`, false},
		{"read_updates", `{"waitMs":1000}`, false},
	} {
		if got := relaymcp.MayWait(tc.tool, tc.args); got != tc.want {
			t.Errorf("%s %s: parked = %v, want %v", tc.tool, tc.args, got, tc.want)
		}
	}
}

// rawClaim posts a waiting claim_next_task with its own connection and
// returns the response once it comes.
func rawClaim(ctx context.Context, url, token string, waitMs int) (*http.Response, []byte, error) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":` + jsonInt(waitMs) + `}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestWaitingClaimIsParked: a waiting claim leaves net/http (the handler
// counts it parked), a post wakes it, and the answer comes on the taken-over
// connection as a complete HTTP/1.1 response: the headers the guard set,
// JSON, Connection: close, the claimed task.
func TestWaitingClaimIsParked(t *testing.T) {
	e := newEnv(t)
	alice := e.client(e.agent("alice"))
	tokBob := e.agent("bob")

	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, body, err := rawClaim(context.Background(), e.url(), tokBob, 20000)
		done <- answer{resp, body, err}
	}()
	eventually(t, 10*time.Second, "the claim to be parked", func() bool {
		return relaymcp.Parked(e.handler) == 1 && e.svc.claims.Load() == 1
	})

	var task relay.Task
	ok(t, call(t, alice, "post_task", map[string]any{"recipientSlug": "bob", "title": "Parked", "instructions": "Wake."}), &task)
	var a answer
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the parked claim was not answered")
	}
	if a.err != nil {
		t.Fatalf("parked claim: %v", a.err)
	}
	if a.resp.StatusCode != http.StatusOK || a.resp.Header.Get("Content-Type") != "application/json" || !a.resp.Close {
		t.Fatalf("answer: HTTP %d, Content-Type %q, close %v; want 200, application/json, close", a.resp.StatusCode, a.resp.Header.Get("Content-Type"), a.resp.Close)
	}
	if got := a.resp.Header.Get("X-Guard"); got != "seen" {
		t.Errorf("X-Guard = %q: the headers set before the call did not go out with it", got)
	}
	if a.resp.ContentLength != int64(len(a.body)) {
		t.Errorf("Content-Length %d, body %d bytes", a.resp.ContentLength, len(a.body))
	}
	var rpc struct {
		ID     int `json:"id"`
		Result struct {
			StructuredContent claimOut `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(a.body, &rpc); err != nil {
		t.Fatalf("answer body %q: %v", a.body, err)
	}
	if got := rpc.Result.StructuredContent; rpc.ID != 7 || got.Status != "task" || got.Task == nil || got.Task.ID != task.ID {
		t.Fatalf("answer = %s, want task %s for id 7", a.body, task.ID)
	}
	eventually(t, 5*time.Second, "the parked call to end", func() bool { return relaymcp.Parked(e.handler) == 0 })
}

// TestParkedAnswerMatchesMCPGo: a parked claim that runs out answers with
// exactly the bytes mcp-go writes for the same call.
func TestParkedAnswerMatchesMCPGo(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	resp, body, err := rawClaim(context.Background(), e.url(), tok, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Close {
		t.Fatal("the claim was not parked (no Connection: close)")
	}
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	withAuth(e.svc, relaymcp.LibraryHandler(e.handler)).ServeHTTP(rec, req)
	if rec.Code != resp.StatusCode || rec.Header().Get("Content-Type") != resp.Header.Get("Content-Type") || !bytes.Equal(rec.Body.Bytes(), body) {
		t.Fatalf("parked: %d %q %s\nmcp-go: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body,
			rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes())
	}
}

// TestParkedClaimEndsWhenClientLeaves: closing the connection of a parked
// claim ends its wait (nothing else reads that connection).
func TestParkedClaimEndsWhenClientLeaves(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, _, err := rawClaim(ctx, e.url(), tok, 20000)
		errc <- err
	}()
	eventually(t, 10*time.Second, "the claim to be parked", func() bool {
		return relaymcp.Parked(e.handler) == 1 && e.svc.claims.Load() == 1
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v, want context.Canceled", err)
	}
	eventually(t, 5*time.Second, "the parked claim to end", func() bool {
		return relaymcp.Parked(e.handler) == 0 && e.svc.claims.Load() == 0
	})
}

// TestParkedClaimsEndAtShutdown: Wait holds while claims are parked; the end
// of the handler's lifetime answers them idle and lets Wait return.
func TestParkedClaimsEndAtShutdown(t *testing.T) {
	e := newEnv(t)
	const n = 3
	bodies := make(chan []byte, n)
	for i := range n {
		tok := e.agent("waiter-" + string(rune('a'+i)))
		go func() {
			_, body, err := rawClaim(context.Background(), e.url(), tok, 20000)
			if err != nil {
				body = []byte(err.Error())
			}
			bodies <- body
		}()
	}
	eventually(t, 10*time.Second, "the claims to be parked", func() bool { return relaymcp.Parked(e.handler) == n })

	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.handler.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with claims parked = %v, want it to run out", err)
	}
	e.stopRequests()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := e.handler.Wait(wctx); err != nil {
		t.Fatalf("Wait after the lifetime ended: %v", err)
	}
	for range n {
		body := <-bodies
		if !bytes.Contains(body, []byte(`"structuredContent":{"status":"idle"}`)) {
			t.Fatalf("parked claim at shutdown answered %s, want idle", body)
		}
	}
}

// TestWaitingClaimWithoutHijack: where the connection cannot be taken (a
// writer that is not a connection), a waiting claim is served as before.
func TestWaitingClaimWithoutHijack(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	withAuth(e.svc, e.handler).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"status":"idle"`) {
		t.Fatalf("HTTP %d %s, want 200 idle", rec.Code, rec.Body.String())
	}
	if n := relaymcp.Parked(e.handler); n != 0 {
		t.Fatalf("parked = %d", n)
	}
}
