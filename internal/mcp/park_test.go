package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestMayWait: only a claim_next_task whose waitMs the tool accepts and
// makes it wait is parked; anything else is served by net/http as before.
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
		{"claim_next_task", `{"waitMs":1e3}`, true}, // the tool reads it as 1000
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

// rawClaim posts a waiting claim_next_task through c and returns the
// response once it comes.
func rawClaim(ctx context.Context, c *http.Client, url, token string, waitMs int) (*http.Response, []byte, error) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":` + jsonInt(waitMs) + `}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// oneConnClient is an HTTP client with at most one connection.
func oneConnClient(t *testing.T) *http.Client {
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// postTraced posts a JSON-RPC body through c as token and returns the
// answer and whether it went on a connection c had used before.
func postTraced(t *testing.T, c *http.Client, url, token, body string) (reused bool, status int, answer []byte) {
	t.Helper()
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	defer resp.Body.Close()
	answer, _ = io.ReadAll(resp.Body)
	return reused, resp.StatusCode, answer
}

// reusedFor calls whoami through c and reports whether it went on a
// connection c had used before.
func reusedFor(t *testing.T, c *http.Client, url, token string) bool {
	t.Helper()
	reused, status, b := postTraced(t, c, url, token, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if status != http.StatusOK || !bytes.Contains(b, []byte(`"slug"`)) {
		t.Fatalf("whoami after the parked claim: HTTP %d %s", status, b)
	}
	return reused
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestWaitingClaimIsParked: a waiting claim leaves net/http (the handler
// counts it parked), a post wakes it, and the answer comes on the taken-over
// connection as a complete HTTP/1.1 response (the headers the guard set,
// JSON, the claimed task); the connection then serves the next call.
func TestWaitingClaimIsParked(t *testing.T) {
	e := newEnv(t)
	alice := e.client(e.agent("alice"))
	tokBob := e.agent("bob")
	c := oneConnClient(t)

	type answer struct {
		resp *http.Response
		body []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, body, err := rawClaim(context.Background(), c, e.url(), tokBob, 20000)
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
	if a.resp.StatusCode != http.StatusOK || a.resp.Header.Get("Content-Type") != "application/json" || a.resp.Close {
		t.Fatalf("answer: HTTP %d, Content-Type %q, close %v; want 200, application/json, kept", a.resp.StatusCode, a.resp.Header.Get("Content-Type"), a.resp.Close)
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
	// The server took the connection back: the next call goes on it.
	if !reusedFor(t, c, e.url(), tokBob) {
		t.Fatal("the call after the parked claim needed a new connection")
	}
}

// TestParkedAnswerMatchesMCPGo: a parked claim that runs out answers with
// exactly the bytes mcp-go writes for the same call.
func TestParkedAnswerMatchesMCPGo(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	resp, body, err := rawClaim(context.Background(), oneConnClient(t), e.url(), tok, 1)
	if err != nil {
		t.Fatal(err)
	}
	if relaymcp.ParkedSoFar(e.handler) != 1 {
		t.Fatal("the claim was not parked")
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
		_, _, err := rawClaim(ctx, oneConnClient(t), e.url(), tok, 20000)
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

// rawWaitingClaim sends a claim_next_task that waits 20 s as token over a
// raw TCP connection to addr (the client side holds no goroutine) and
// returns the connection, closed when the test ends.
func rawWaitingClaim(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20000}}}`
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAuthorization: Bearer " + token +
		"\r\nContent-Length: " + jsonInt(len(body)) + "\r\n\r\n" + body
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestParkedClaimHoldsOneGoroutine: a parked claim that waits holds one
// goroutine, the one reading its connection, not one more for the call;
// the calls still count as tool calls in flight until they answer, and one
// answers when a task comes.
func TestParkedClaimHoldsOneGoroutine(t *testing.T) {
	e := newEnv(t)
	met := &countingObserver{started: map[string]int{}, ended: map[string]int{}, failed: map[string]int{}}
	e.handler = relaymcp.NewHandler(e.svc, relaymcp.Options{Version: "test", Logger: testLogger(t), Lifetime: context.Background(), Observer: met})
	srv := httptest.NewServer(withAuth(e.svc, e.handler))
	t.Cleanup(srv.Close)
	const n = 40
	tok := e.agent("bob")
	before := runtime.NumGoroutine()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = rawWaitingClaim(t, srv.Listener.Addr().String(), tok)
	}
	eventually(t, 10*time.Second, "the claims to be parked and waiting", func() bool {
		return relaymcp.Parked(e.handler) == n && e.svc.claims.Load() == n && met.inFlight("claim_next_task") == n
	})
	// net/http's own goroutines end as it hands each connection over.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine()-before > n+5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d parked claims hold %d goroutines; want one each", n, runtime.NumGoroutine()-before)
		}
	}
	var task relay.Task
	ok(t, call(t, e.client(e.agent("alice")), "post_task", map[string]any{"recipientSlug": "bob", "title": "One of many", "instructions": "Wake."}), &task)
	eventually(t, 10*time.Second, "one claim to take the task", func() bool {
		return e.svc.claims.Load() == n-1 && met.inFlight("claim_next_task") == n-1
	})
	// The claims parked in the order the server took them: find the one
	// that answered.
	var answer *bufio.Reader
	for deadline := time.Now().Add(10 * time.Second); answer == nil; {
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
			if r := bufio.NewReader(c); func() bool { _, err := r.Peek(1); return err == nil }() {
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				answer = r
				break
			}
		}
		if answer == nil && time.Now().After(deadline) {
			t.Fatal("no parked claim answered")
		}
	}
	resp, err := http.ReadResponse(answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Contains(got, []byte(task.ID)) {
		t.Fatalf("the parked claim answered %s, %v; want task %s", got, err, task.ID)
	}
}

// TestBurstOfParkedClaimsIsTidied: a burst of claims that park at once
// makes the handler collect the garbage their requests left, once, when
// they have stopped arriving; the claims stay parked and one still wakes
// with a task. (TestTidierDecides holds the tidier's rules.)
func TestBurstOfParkedClaimsIsTidied(t *testing.T) {
	e := newEnv(t)
	e.handler = relaymcp.NewHandler(e.svc, relaymcp.Options{Version: "test", Logger: testLogger(t), Lifetime: context.Background()})
	tidies := relaymcp.TidyAfter(e.handler, 10, 20*time.Millisecond)
	srv := httptest.NewServer(withAuth(e.svc, e.handler))
	t.Cleanup(srv.Close)
	const n = 12
	tok := e.agent("bob")
	park := func() { rawWaitingClaim(t, srv.Listener.Addr().String(), tok) }
	for range n - 1 {
		park()
	}
	eventually(t, 10*time.Second, "the first claims to park", func() bool { return relaymcp.Parked(e.handler) == n-1 })
	if got := tidies(); got != 0 {
		t.Fatalf("%d parked, below the burst size: tidied %d times, want 0", n-1, got)
	}
	park()
	eventually(t, 10*time.Second, "one tidy after the burst", func() bool { return tidies() == 1 })
	if got := relaymcp.Parked(e.handler); got != n {
		t.Fatalf("after the tidy %d claims are parked, want %d", got, n)
	}
	var task relay.Task
	ok(t, call(t, e.client(e.agent("alice")), "post_task", map[string]any{"recipientSlug": "bob", "title": "After the tidy", "instructions": "Wake."}), &task)
	eventually(t, 10*time.Second, "a parked claim to take the task", func() bool { return relaymcp.Parked(e.handler) == n-1 })
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
			_, body, err := rawClaim(context.Background(), oneConnClient(t), e.url(), tok, 20000)
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

// TestParkedClaimWithPipelinedRequest: a request pipelined behind a
// waiting claim, in the same write (net/http has read it already) or while
// the claim waits, is answered after the claim, in order, on the same
// connection, which then stays open.
func TestParkedClaimWithPipelinedRequest(t *testing.T) {
	for _, sameWrite := range []bool{true, false} {
		t.Run(map[bool]string{true: "same write", false: "while parked"}[sameWrite], func(t *testing.T) {
			e := newEnv(t)
			tok := e.agent("bob")
			u, err := url.Parse(e.url())
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":300}}}`
			claim := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
				u.Host, tok, len(body), body)
			who := `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
			second := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
				u.Host, tok, len(who), who)
			if sameWrite {
				_, err = io.WriteString(conn, claim+second)
			} else {
				if _, err = io.WriteString(conn, claim); err == nil {
					eventually(t, 10*time.Second, "the claim to be parked", func() bool { return relaymcp.Parked(e.handler) == 1 })
					_, err = io.WriteString(conn, second)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			for i, want := range []string{`"id":9,"result":{"content":[{"type":"text","text":"{\"status\":\"idle\"}"}]`, `"id":10,`} {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d: %v", i+1, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Close || !strings.Contains(string(b), want) {
					t.Fatalf("answer %d: HTTP %d, close %v, %s; want 200 with %s, connection kept", i+1, resp.StatusCode, resp.Close, b, want)
				}
			}
			if relaymcp.ParkedSoFar(e.handler) != 1 {
				t.Fatal("the claim was not parked")
			}
		})
	}
}

// TestParkedClaimsUnderChurn: twenty agents claim in a loop over kept
// connections (each answer hands its connection back to the server, and
// the next claim is parked on it again) while tasks are posted to them and
// a quarter of the claims are given up by their clients mid-wait. No task
// is delivered twice or to the wrong agent; the only tasks claimed but not
// delivered are those handed to a claim whose client left, at most one per
// claim given up; and at the end nothing is parked and no goroutine is left.
func TestParkedClaimsUnderChurn(t *testing.T) {
	e := newEnv(t)
	const agents, tasks, rounds = 20, 100, 12
	if _, _, err := e.svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: "boss", DisplayName: "Boss", ModelSlug: "m",
		Capabilities: []string{"text-input", "text-output"}}); err != nil {
		t.Fatal(err)
	}
	toks := make([]string, agents)
	for i := range toks {
		toks[i] = e.agent(fmt.Sprintf("churn-%d", i))
	}
	goroutines := runtime.NumGoroutine()

	type delivery struct{ agent, task string }
	var (
		mu        sync.Mutex
		delivered []delivery
		gaveUp    int
	)
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for r := range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				leave := (i+r)%4 == 0
				if leave {
					time.AfterFunc(time.Duration(5+(i*7+r*3)%20)*time.Millisecond, cancel)
				}
				_, body, err := rawClaim(ctx, c, e.url(), tok, 300)
				cancel()
				mu.Lock()
				switch {
				case leave && err != nil:
					gaveUp++
				case err != nil:
					t.Errorf("agent %d round %d: %v", i, r, err)
				default:
					var rpc struct {
						Result struct {
							StructuredContent claimOut `json:"structuredContent"`
						} `json:"result"`
					}
					if jerr := json.Unmarshal(body, &rpc); jerr != nil {
						t.Errorf("agent %d round %d: %s: %v", i, r, body, jerr)
					} else if got := rpc.Result.StructuredContent; got.Status == "task" {
						delivered = append(delivered, delivery{fmt.Sprintf("churn-%d", i), got.Task.ID})
					}
				}
				mu.Unlock()
			}
		}()
	}
	for n := range tasks {
		if _, err := e.svc.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "boss", RecipientSlug: fmt.Sprintf("churn-%d", n%agents),
			Title: fmt.Sprintf("churn %d", n), Instructions: "Churn."}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()

	claimed, err := e.svc.ListTasks(context.Background(), relay.TaskFilter{Statuses: []relay.TaskStatus{relay.StatusClaimed}, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{}
	for _, s := range claimed {
		owner[s.ID] = s.RecipientSlug
	}
	seen := map[string]bool{}
	for _, d := range delivered {
		if seen[d.task] {
			t.Errorf("task %s delivered twice", d.task)
		}
		seen[d.task] = true
		if owner[d.task] != d.agent {
			t.Errorf("task %s delivered to %s, claimed by %q", d.task, d.agent, owner[d.task])
		}
	}
	if lost := len(claimed) - len(delivered); lost < 0 || lost > gaveUp {
		t.Errorf("%d tasks claimed, %d delivered: %d lost with only %d claims given up", len(claimed), len(delivered), lost, gaveUp)
	}
	t.Logf("%d delivered, %d claimed in all, %d claims given up", len(delivered), len(claimed), gaveUp)
	eventually(t, 10*time.Second, "every parked call to end and its goroutines with it", func() bool {
		return relaymcp.Parked(e.handler) == 0 && e.svc.claims.Load() == 0 && runtime.NumGoroutine() <= goroutines+2
	})
}

// holdingService lets a claim that got a task return only once the claim's
// context has ended, as when the caller leaves just after a post handed its
// waiting claim the task.
type holdingService struct {
	relay.Service
	got chan string
}

func (s *holdingService) ClaimNext(ctx context.Context, in relay.ClaimInput) (*relay.Task, error) {
	task, err := s.Service.ClaimNext(ctx, in)
	if task != nil {
		s.got <- task.ID
		<-ctx.Done()
	}
	return task, err
}

// TestTaskOfALeftClaimGoesBack: a task that reaches a waiting claim whose
// caller has gone is released to the queue at once (with a report saying
// why), not left claimed until its lease runs out; parked or not.
func TestTaskOfALeftClaimGoesBack(t *testing.T) {
	for _, parked := range []bool{true, false} {
		t.Run(map[bool]string{true: "parked", false: "net/http"}[parked], func(t *testing.T) {
			svc, closer := openService(t)
			t.Cleanup(func() { _ = closer.Close() })
			hs := &holdingService{Service: svc, got: make(chan string, 1)}
			life, stop := context.WithCancel(context.Background())
			t.Cleanup(stop)
			h := relaymcp.NewHandler(hs, relaymcp.Options{Version: "test", Logger: testLogger(t), Lifetime: life})
			srv := httptest.NewServer(withAuth(hs, h))
			t.Cleanup(srv.Close)
			var bobTok string
			for _, slug := range []string{"boss", "bob"} {
				_, tok, err := svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m",
					Capabilities: []string{"text-input", "text-output"}})
				if err != nil {
					t.Fatal(err)
				}
				bobTok = tok
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				if parked {
					_, _, _ = rawClaim(ctx, oneConnClient(t), srv.URL, bobTok, 20000)
					return
				}
				req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp",
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20000}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+bobTok)
				withAuth(hs, h).ServeHTTP(httptest.NewRecorder(), req)
			}()
			posted, err := svc.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "boss", RecipientSlug: "bob", Title: "Left", Instructions: "Nobody reads this."})
			if err != nil {
				t.Fatal(err)
			}
			if id := <-hs.got; id != posted.ID {
				t.Fatalf("claimed %s, posted %s", id, posted.ID)
			}
			cancel()
			<-done
			eventually(t, 5*time.Second, "the task to go back to the queue", func() bool {
				task, err := svc.Task(context.Background(), posted.ID)
				return err == nil && task.Status == relay.StatusQueued
			})
			task, err := svc.Task(context.Background(), posted.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(task.Reports); n == 0 || !strings.Contains(task.Reports[n-1].Message, "ended before the task reached it") {
				t.Fatalf("reports = %+v, want the release saying why", task.Reports)
			}
			if parked {
				eventually(t, 5*time.Second, "the parked call to end", func() bool { return relaymcp.Parked(h) == 0 })
			}
		})
	}
}

// parkServer serves a handler over svc on a loopback server configured by
// cfg, with the lifetime stop ends; the server closes when the test ends.
func parkServer(t *testing.T, svc relay.Service, cfg func(*http.Server)) (url string, h *relaymcp.Handler, stop context.CancelFunc) {
	t.Helper()
	life, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	h = relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: testLogger(t), Lifetime: life})
	srv := httptest.NewUnstartedServer(withAuth(svc, h))
	cfg(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp", h, stop
}

// TestHandedBackConnectionKeepsServerTimeouts: once a parked claim has
// answered, its connection is the server's again with the server's own
// rules. Its next answer may take longer than a parked answer's write
// deadline; it stays open while idle up to IdleTimeout (not just
// ReadHeaderTimeout); and shutting down closes it at once.
func TestHandedBackConnectionKeepsServerTimeouts(t *testing.T) {
	relaymcp.SetParkedWriteTimeout(t, 100*time.Millisecond)
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-input", "text-output"}})
	url, h, stop := parkServer(t, svc, func(s *http.Server) {
		s.ReadHeaderTimeout = 150 * time.Millisecond
		s.IdleTimeout = time.Minute
	})
	c := oneConnClient(t)
	if _, body, err := rawClaim(context.Background(), c, url, tok, 1); err != nil || !bytes.Contains(body, []byte(`"status":"idle"`)) {
		t.Fatalf("parked claim: %s, %v", body, err)
	}
	if relaymcp.ParkedSoFar(h) != 1 {
		t.Fatal("the claim was not parked")
	}

	// Idle longer than ReadHeaderTimeout, then a call whose answer comes
	// later than the parked write deadline (mcp-go serves it: _meta).
	time.Sleep(400 * time.Millisecond)
	reused, status, b := postTraced(t, c, url, tok, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"k":"v"},"name":"claim_next_task","arguments":{"waitMs":300}}}`)
	if !reused || status != http.StatusOK || !bytes.Contains(b, []byte(`"status":"idle"`)) {
		t.Fatalf("reused %v, HTTP %d %s; want the kept connection to answer idle", reused, status, b)
	}

	// A parked claim's connection idle after its answer closes with the lifetime.
	if _, _, err := rawClaim(context.Background(), c, url, tok, 1); err != nil {
		t.Fatal(err)
	}
	stop()
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Wait(wctx); err != nil {
		t.Fatalf("Wait after the lifetime ended, with an idle handed-back connection: %v", err)
	}
}

// TestParkedConnectionCloses: after a parked claim's answer the connection
// is closed when the client asked for that (HTTP/1.0, Connection: close)
// and when it stays idle past the server's IdleTimeout.
func TestParkedConnectionCloses(t *testing.T) {
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-input", "text-output"}})
	addr, h, _ := parkServer(t, svc, func(s *http.Server) { s.IdleTimeout = 200 * time.Millisecond })
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name, proto, extra string
		close              bool // the answer says Connection: close
	}{
		{"HTTP/1.0", "HTTP/1.0", "", true},
		{"Connection: close", "HTTP/1.1", "Connection: close\r\n", true},
		{"idle past IdleTimeout", "HTTP/1.1", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			body := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":1}}}`
			fmt.Fprintf(conn, "POST /mcp %s\r\nHost: %s\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\n%sContent-Length: %d\r\n\r\n%s",
				tc.proto, u.Host, tok, tc.extra, len(body), body)
			if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close != tc.close || !bytes.Contains(b, []byte(`"status":"idle"`)) {
				t.Fatalf("answer: HTTP %d, close %v, %s; want 200 idle, close %v", resp.StatusCode, resp.Close, b, tc.close)
			}
			if relaymcp.ParkedSoFar(h) != int64(i+1) {
				t.Fatal("the claim was not parked")
			}
			// Within the read deadline above (10 s), the relay closes its end.
			if n, err := br.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("after the answer: read %d bytes, %v; want the connection closed", n, err)
			}
		})
	}
}
