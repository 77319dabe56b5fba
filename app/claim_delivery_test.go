package app_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a task handed to a waiting claim whose caller is gone goes back
// to the queue at once, also when the caller sent one byte more (a
// pipelined request, which stops net/http from watching the connection for
// its close) and then closed it: the relay's whole HTTP stack, a raw TCP
// client. Before, the task was answered into the closed connection (a
// write that succeeds) and stayed claimed for the claim's lease (24 h).
// A caller that stays gets the task (the check does not give back tasks
// that reach their caller).
func TestHandedTaskReachesALiveCallerOrGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		// leave: what the caller does once its claim waits.
		leave func(c net.Conn)
		back  bool
	}{
		{"pipelined byte, then closed", func(c net.Conn) { _, _ = io.WriteString(c, "G"); _ = c.Close() }, true},
		{"closed", func(c net.Conn) { _ = c.Close() }, true},
		{"stays", func(net.Conn) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startRelay(t)
			rev, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "bob", DisplayName: "Bob", ModelSlug: "m", Capabilities: []string{"text-input"}})
			noErr(t, err)
			addr := r.Addr().String()
			body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"claim_next_task","arguments":{"waitMs":20000}}}`
			req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAuthorization: Bearer " + rev.Token +
				"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
			c, err := net.Dial("tcp", addr)
			noErr(t, err)
			t.Cleanup(func() { _ = c.Close() })
			_, err = io.WriteString(c, req)
			noErr(t, err)
			// The claim has been read and waits once bob is seen.
			poll.Until(t, "bob's claim to wait", 10*time.Second, func() bool {
				a, err := r.Service().GetAgent(context.Background(), "bob")
				return err == nil && a.LastSeenAt != ""
			})
			tc.leave(c)
			task, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "bob", Title: "Handed", Instructions: "Read me."})
			noErr(t, err)
			if !tc.back {
				got := waitStatus(t, r, task.ID, relay.StatusClaimed)
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 4096)
				n, _ := io.ReadAtLeast(c, buf, 1)
				if got.Status != relay.StatusClaimed || n == 0 {
					t.Fatalf("a caller that stayed: task %s, answer %q", got.Status, buf[:n])
				}
				return
			}
			poll.Until(t, "the handed task to go back to the queue", 10*time.Second, func() bool {
				got, err := r.Service().Task(context.Background(), task.ID)
				return err == nil && got.Status == relay.StatusQueued
			})
		})
	}
}
