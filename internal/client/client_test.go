package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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
}
