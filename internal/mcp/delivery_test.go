package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// failingWriter is a connection whose writes fail (the caller is gone).
type failingWriter struct {
	*httptest.ResponseRecorder
}

func (w failingWriter) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// Ensure a task handed to a waiting claim whose answer cannot be written
// (the write fails) goes back to the queue at once, on the lean path and on
// mcp-go's (a call with _meta goes there), instead of staying claimed for
// the claim's lease; an answer that is written keeps the task claimed.
func TestUndeliveredClaimAnswerGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		fail       bool
		want       relay.TaskStatus
	}{
		{"lean, write fails", "", true, relay.StatusQueued},
		{"mcp-go, write fails", `"_meta":{"progressToken":"p1"},`, true, relay.StatusQueued},
		{"lean, written", "", false, relay.StatusClaimed},
		{"mcp-go, written", `"_meta":{"progressToken":"p1"},`, false, relay.StatusClaimed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, closer := openService(t)
			t.Cleanup(func() { _ = closer.Close() })
			h := withAuth(svc, relaymcp.NewHandler(svc, relaymcp.Options{Version: "test", Logger: testLogger(t)}))
			var bobTok string
			for _, slug := range []string{"boss", "bob"} {
				_, tok, err := svc.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m",
					Capabilities: []string{"text-input", "text-output"}})
				if err != nil {
					t.Fatal(err)
				}
				bobTok = tok
			}
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + tc.meta + `"name":"claim_next_task","arguments":{"waitMs":20000}}}`
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+bobTok)
			rec := httptest.NewRecorder()
			var w http.ResponseWriter = rec
			if tc.fail {
				w = failingWriter{rec}
			}
			done := make(chan struct{})
			go func() { defer close(done); h.ServeHTTP(w, req) }()
			posted, err := svc.PostTask(context.Background(), relay.PostTaskInput{SenderSlug: "boss", RecipientSlug: "bob", Title: "Handed", Instructions: "x"})
			if err != nil {
				t.Fatal(err)
			}
			// The claim takes it (waiting or at once) and answers.
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the claim did not answer with the task")
			}
			task, err := svc.Task(context.Background(), posted.ID)
			if err != nil || task.Status != tc.want {
				t.Fatalf("task %s after the answer (written: %v): %v; answer %q", task.Status, !tc.fail, err, rec.Body.String())
			}
			if !tc.fail && !strings.Contains(rec.Body.String(), posted.ID) {
				t.Fatalf("the written answer lacks the task: %q", rec.Body.String())
			}
		})
	}
}
