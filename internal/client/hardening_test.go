package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/client"
)

// capture is a listener that answers 200 {} to everything and records the
// Authorization headers it was sent: a program that took the relay's port.
type capture struct {
	mu    sync.Mutex
	auths []string
	srv   *httptest.Server
}

func newCapture(t *testing.T) *capture {
	c := &capture{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			c.auths = append(c.auths, a)
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"proof":"made-up"}`)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auths...)
}

// TestImpostorOnRelayPortNeverReceivesAdminToken: whatever listens on the
// relay's port must prove it holds the admin token before the client sends
// it; a program that cannot gets nothing.
func TestImpostorOnRelayPortNeverReceivesAdminToken(t *testing.T) {
	c := newCapture(t)
	const secret = "the-admin-token-0123456789abcdef0123"
	err := client.New(c.srv.URL, secret).Call(context.Background(), "System", "Show", nil)
	if !errors.Is(err, client.ErrNotOurRelay) {
		t.Fatalf("err = %v, want ErrNotOurRelay", err)
	}
	if got := c.seen(); len(got) != 0 {
		t.Fatalf("the impostor received %q", got)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatal("the error shows the token")
	}
}

// TestAdminTokenNeverSentOverHTTPToAnotherComputer: plain http is only for
// loopback; other hosts need https, and no connection is even attempted.
func TestAdminTokenNeverSentOverHTTPToAnotherComputer(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:4318", true},
		{"http://localhost:4318", true},
		{"http://[::1]:4318", true},
		{"http://127.0.0.2:4318", true},
		{"https://relay.example", true},
		{"http://evil.example:4318", false},
		{"http://192.0.2.7:4318", false},
		{"http://0.0.0.0:4318", false},
		{"http://localhost.evil.example", false},
		{"ftp://127.0.0.1", false},
		{"127.0.0.1:4318", false},
	} {
		err := client.CheckAdminURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckAdminURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
	err := client.New("http://evil.example:4318", "tok").Call(context.Background(), "Tasks", "List", nil)
	if !errors.Is(err, client.ErrInsecureURL) {
		t.Fatalf("err = %v, want ErrInsecureURL", err)
	}
}
