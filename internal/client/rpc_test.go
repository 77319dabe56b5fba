package client_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/client"
)

// Ensure the JSON-RPC message is read from a JSON body or from an SSE
// stream's last data event, and that anything else is refused.
func TestRPCMessage(t *testing.T) {
	cases := []struct {
		name, ctype, body, want string
		fail                    bool
	}{
		{"json", "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`, false},
		{"json with whitespace", "application/json; charset=utf-8", "\n {\"id\":1}\n", `{"id":1}`, false},
		{"sse", "text/event-stream", "event: message\ndata: {\"id\":2}\n\n", `{"id":2}`, false},
		{"sse without space", "text/event-stream", "data:{\"id\":2}\n\n", `{"id":2}`, false},
		{"sse with keep-alives", "text/event-stream", ": ping\n\n: ping\n\nevent: message\ndata: {\"id\":3}\n\n", `{"id":3}`, false},
		{"sse last event wins", "text/event-stream", "data: {\"method\":\"notifications/progress\"}\n\ndata: {\"id\":4}\n\n", `{"id":4}`, false},
		{"sse multi-line data", "text/event-stream", "data: {\"id\":\ndata: 5}\n", "{\"id\":\n5}", false},
		{"sse no trailing blank line", "text/event-stream", "data: {\"id\":6}", `{"id":6}`, false},
		{"sse body without content type", "", "data: {\"id\":7}\n\n", `{"id":7}`, false},
		{"empty", "text/event-stream", "", "", true},
		{"garbage", "text/plain", "oops", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := client.RPCMessage(c.ctype, []byte(c.body))
			if c.fail {
				if err == nil {
					t.Fatalf("RPCMessage = %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("RPCMessage = %q, want %q", got, c.want)
			}
		})
	}
}
