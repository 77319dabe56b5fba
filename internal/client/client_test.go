package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a call sends the admin token and positional arguments, decodes the
// result, and turns refusals into *relay.Error.
func TestCall(t *testing.T) {
	var sawWrong atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path == "/bridge/identity":
			io.WriteString(w, `{"proof":"`+relay.IdentityProof("admin", r.URL.Query().Get("challenge"))+`"}`)
		case r.Header.Get("Authorization") != "Bearer admin":
			sawWrong.Store(true)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"unauthorized","message":"Sign in with the admin token."}`)
		case r.URL.Path == "/bridge/Agents.Get" && string(body) == `["bob"]`:
			io.WriteString(w, `{"slug":"bob"}`)
		case r.URL.Path == "/bridge/Agents.Delete":
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error":"operator_protected","message":"The operator cannot be deleted."}`)
		default:
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "upstream broke")
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	var a relay.Agent
	if err := client.New(srv.URL, "admin").Call(ctx, "Agents", "Get", &a, "bob"); err != nil || a.Slug != "bob" {
		t.Fatalf("get: %+v %v", a, err)
	}
	err := client.New(srv.URL, "admin").Call(ctx, "Agents", "Delete", nil, "operator")
	if relay.ErrorCode(err) != relay.EOperatorProtected {
		t.Fatalf("refusal: %v", err)
	}
	// A token the relay does not hold is never sent: the relay cannot prove it.
	err = client.New(srv.URL, "wrong").Call(ctx, "Agents", "Get", nil, "bob")
	if !errors.Is(err, client.ErrNotOurRelay) || sawWrong.Load() {
		t.Fatalf("wrong token: %v (sent: %v)", err, sawWrong.Load())
	}
	err = client.New(srv.URL, "admin").Call(ctx, "Other", "Thing", nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 502") || relay.IsDomain(err) {
		t.Fatalf("non-JSON failure: %v", err)
	}
}

// Ensure a relay that is not running is reported as such.
func TestNotRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = client.New("http://"+addr, "admin").Call(context.Background(), "Agents", "List", nil)
	if !errors.Is(err, client.ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	// An agent's tool call says the same, with how to start one (not as
	// the tool's own failure: "post_task: no relay is running at …").
	err = (&client.Agent{BaseURL: "http://" + addr, Token: "cca_x"}).Tool(context.Background(), "post_task", map[string]any{}, nil)
	if want := "no relay is running at http://" + addr + ": start it with `crosschat-relay serve` (or the app)"; !errors.Is(err, client.ErrNotRunning) || err.Error() != want {
		t.Fatalf("a tool call: %v\nwant: %s", err, want)
	}
}

// Ensure a push stream with no relay at its address says so in words while
// it retries (it logged the dialer's "dial tcp …: connect: connection
// refused"), and ends when its context does.
func TestPushStreamNotRunning(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var mu sync.Mutex
	var lines []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ps := &client.PushStream{BaseURL: "http://" + addr, Token: "cca_x", After: -1,
		OnEvent: func(relay.PushEvent) error { return nil },
		Logf: func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			if lines = append(lines, fmt.Sprintf(format, a...)); len(lines) == 2 {
				cancel()
			}
		}}
	if err := ps.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"push stream: no relay is running at http://" + addr + "; reconnecting in 250ms", "push stream: no relay is running at http://" + addr + "; reconnecting in 500ms"}
	if !slices.Equal(lines, want) {
		t.Fatalf("logged %q\nwant %q", lines, want)
	}
}
