package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// fakeMCP answers tools/call with a canned result, as JSON or SSE.
func fakeMCP(t *testing.T, sse bool, result any) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer cca_test" || !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			ID     int64  `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			} `json:"params"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || req.Method != "tools/call" || req.Params.Name != "get_task" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": keep-alive\n\nevent: message\ndata: "+string(resp)+"\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func textResult(text string, isError bool) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": text}}, "isError": isError}
}

func TestClientTool(t *testing.T) {
	ctx := context.Background()
	for _, sse := range []bool{false, true} {
		name := "json"
		if sse {
			name = "sse"
		}
		t.Run(name+" success", func(t *testing.T) {
			srv := fakeMCP(t, sse, textResult(`{"id":"t1","status":"queued","reports":[]}`, false))
			c := NewClient(srv.URL, 2)
			defer c.Close()
			var task relay.Task
			if err := c.Tool(ctx, "cca_test", "get_task", map[string]any{"taskId": "t1"}, &task); err != nil {
				t.Fatal(err)
			}
			if task.ID != "t1" || task.Status != relay.StatusQueued {
				t.Errorf("task = %+v", task)
			}
		})
		t.Run(name+" refusal", func(t *testing.T) {
			srv := fakeMCP(t, sse, textResult(`{"error":"unknown_task","message":"No such task."}`, true))
			c := NewClient(srv.URL, 2)
			defer c.Close()
			err := c.Tool(ctx, "cca_test", "get_task", nil, nil)
			var re *relay.Error
			if !errors.As(err, &re) || re.Code != relay.EUnknownTask {
				t.Fatalf("err = %v, want unknown_task", err)
			}
		})
		t.Run(name+" plain-text tool error", func(t *testing.T) {
			srv := fakeMCP(t, sse, textResult("Input validation error: taskId", true))
			c := NewClient(srv.URL, 2)
			defer c.Close()
			var te *ToolError
			if err := c.Tool(ctx, "cca_test", "get_task", nil, nil); !errors.As(err, &te) {
				t.Fatalf("err = %v, want *ToolError", err)
			}
		})
	}
	t.Run("http status", func(t *testing.T) {
		srv := fakeMCP(t, false, textResult("{}", false))
		c := NewClient(srv.URL, 2)
		defer c.Close()
		if err := c.Tool(ctx, "cca_wrong", "get_task", nil, nil); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
			t.Fatalf("err = %v, want HTTP 401", err)
		}
	})
}
