package mcp_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure the GET every MCP client makes for a stream (none is offered) is
// not an Info line in the operator's log, one per connection as it was,
// and is still there at Debug.
func TestStreamRequestIsDebugNotInfo(t *testing.T) {
	svc, tok := agentService(t, relay.CreateAgentInput{Slug: "log-a", DisplayName: "Log A", ModelSlug: "m", Capabilities: []string{"text-input"}})
	p, err := svc.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		level slog.Level
		want  bool
	}{{slog.LevelInfo, false}, {slog.LevelDebug, true}} {
		var buf bytes.Buffer
		h := relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: c.level}))})
		req := httptest.NewRequestWithContext(relay.WithPrincipal(context.Background(), p), http.MethodGet, "/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code < 400 {
			t.Fatalf("GET /mcp: %d, want a refusal (no stream is offered)", w.Code)
		}
		if got := strings.Contains(buf.String(), "streaming is disabled"); got != c.want {
			t.Errorf("log at %v has the GET's note: %v, want %v:\n%s", c.level, got, c.want, buf.String())
		}
	}
}
