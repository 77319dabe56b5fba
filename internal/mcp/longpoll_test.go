package mcp_test

// Waiting claims over real HTTP connections: each waits on its request's
// goroutine (net/http's), answers as mcp-go would, and leaves nothing
// behind when its client goes.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// rawClaim posts a waiting claim_next_task through c and returns the
// response once it comes.
func rawClaim(ctx context.Context, c *http.Client, url, token string, waitMs int) (*http.Response, []byte, error) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":` + strconv.Itoa(waitMs) + `}}}`
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

// rawWaitingClaim sends a claim_next_task that waits 20 s as token over a
// raw TCP connection to addr (the client side holds no goroutine) and
// returns the connection, closed when the test ends.
func rawWaitingClaim(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20000}}}`
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAuthorization: Bearer " + token +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
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

// TestWaitingClaimAnswerMatchesMCPGo: a waiting claim that runs out
// answers, on the lean path, with exactly the bytes mcp-go writes for the
// same call.
func TestWaitingClaimAnswerMatchesMCPGo(t *testing.T) {
	e := newEnv(t)
	tok := e.agent("bob")
	resp, body, err := rawClaim(context.Background(), oneConnClient(t), e.url(), tok, 1)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":1}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := httptest.NewRecorder()
	withAuth(e.svc, relaymcp.LibraryHandler(e.handler)).ServeHTTP(rec, req)
	if rec.Code != resp.StatusCode || rec.Header().Get("Content-Type") != resp.Header.Get("Content-Type") || !bytes.Equal(rec.Body.Bytes(), body) {
		t.Fatalf("lean: %d %q %s\nmcp-go: %d %q %s", resp.StatusCode, resp.Header.Get("Content-Type"), body,
			rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes())
	}
}

// TestWaitingClaimsWaitOnTheirRequests: a waiting claim waits on its own
// request's goroutine and starts none of its own (net/http holds two per
// connection: the connection's and its background reader); the middleware
// sees it as any call in flight until it answers, and the one a post
// reaches answers on its connection with the task.
func TestWaitingClaimsWaitOnTheirRequests(t *testing.T) {
	e := newEnv(t)
	met := &countingObserver{started: map[string]int{}, ended: map[string]int{}, failed: map[string]int{}}
	e.handler = relaymcp.NewHandler(e.svc, relaymcp.Options{Version: "test", Logger: testLogger(t), Observer: met})
	srv := httptest.NewServer(withAuth(e.svc, e.handler))
	t.Cleanup(srv.Close)
	const n = 40
	tok := e.agent("bob")
	before := runtime.NumGoroutine()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = rawWaitingClaim(t, srv.Listener.Addr().String(), tok)
	}
	eventually(t, 10*time.Second, "the claims to wait", func() bool {
		return e.svc.claims.Load() == n && met.inFlight("claim_next_task") == n
	})
	if grown := runtime.NumGoroutine() - before; grown > 2*n+5 {
		t.Fatalf("%d waiting claims hold %d goroutines; want net/http's two each", n, grown)
	}
	var task relay.Task
	ok(t, call(t, e.client(e.agent("alice")), "post_task", map[string]any{"recipientSlug": "bob", "title": "One of many", "instructions": "Wake."}), &task)
	eventually(t, 10*time.Second, "one claim to take the task", func() bool {
		return e.svc.claims.Load() == n-1 && met.inFlight("claim_next_task") == n-1
	})
	// Find the claim that answered.
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
			t.Fatal("no waiting claim answered")
		}
	}
	resp, err := http.ReadResponse(answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.Header.Get("X-Guard") != "seen" || !bytes.Contains(got, []byte(task.ID)) {
		t.Fatalf("the claim answered %v %s, %v; want task %s with the guard's headers", resp.Header, got, err, task.ID)
	}
}

// TestWaitingClaimsUnderChurn: twenty agents claim in a loop over kept
// connections while tasks are posted to them and a quarter of the claims
// are given up by their clients mid-wait. No task is delivered twice or to
// the wrong agent; the only tasks claimed but not delivered are those
// handed to a claim whose client left, at most one per claim given up; and
// at the end no claim waits and no goroutine is left.
func TestWaitingClaimsUnderChurn(t *testing.T) {
	e := newEnv(t)
	const agents, tasks, rounds = 20, 100, 12
	if _, _, err := e.svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: "boss", DisplayName: "Boss", ModelSlug: "m",
		Capabilities: []string{"text-input", "text-output"}}); err != nil {
		t.Fatal(err)
	}
	toks := make([]string, agents)
	for i := range toks {
		toks[i] = e.agent("churn-" + strconv.Itoa(i))
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
						delivered = append(delivered, delivery{"churn-" + strconv.Itoa(i), got.Task.ID})
					}
				}
				mu.Unlock()
			}
		}()
	}
	for n := range tasks {
		if _, err := e.svc.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "boss", RecipientSlug: "churn-" + strconv.Itoa(n%agents),
			Title: "churn " + strconv.Itoa(n), Instructions: "Churn."}); err != nil {
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
	e.srv.CloseClientConnections()
	eventually(t, 10*time.Second, "every claim to end and its goroutines with it", func() bool {
		return e.svc.claims.Load() == 0 && runtime.NumGoroutine() <= goroutines+2
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
// why), not left claimed until its lease runs out.
func TestTaskOfALeftClaimGoesBack(t *testing.T) {
	svc, closer := openService(t)
	t.Cleanup(func() { _ = closer.Close() })
	hs := &holdingService{Service: svc, got: make(chan string, 1)}
	h := relaymcp.NewHandler(hs, relaymcp.Options{Version: "test", Logger: testLogger(t)})
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
		_, _, _ = rawClaim(ctx, oneConnClient(t), srv.URL, bobTok, 20000)
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
}
