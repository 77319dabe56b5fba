package web_test

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyCutOff is N9: a client that sends headers and then trickles
// (here: stops sending) its body is answered 408 and its connection
// closed once the body's read time has passed, on enrollment, sign-in,
// /mcp and the bridge, instead of holding the connection for ever.
func TestSlowBodyCutOff(t *testing.T) {
	for _, tc := range []struct{ name, path, bearer string }{
		{"Enroll", "/api/enroll", ""},
		{"SignIn", "/bridge/session", ""},
		{"MCP", "/mcp", adminToken},
		{"Bridge", "/bridge/Tests.Sum", adminToken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{bodyTimeout: 200 * time.Millisecond, rateLimit: noRateLimit})
			conn, err := net.Dial("tcp", e.host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: " + e.host + "\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n"
			if tc.bearer != "" {
				head += "Authorization: Bearer " + tc.bearer + "\r\n"
			}
			if _, err := conn.Write([]byte(head + "\r\n" + `{"code":"cci_`)); err != nil {
				t.Fatal(err)
			}
			// The bound of the test itself, far above the 200 ms the body has:
			// without a body timeout the read below waits all of it.
			_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408", resp.StatusCode)
			}
			// And the connection is closed, not kept for the rest of the body.
			if _, err := conn.Read(make([]byte, 1)); err == nil || strings.Contains(err.Error(), "timeout") {
				t.Fatalf("connection still open after the cut-off: %v", err)
			}
		})
	}
}

// TestBodyTimeoutSparesLongCalls ensures the body's read time ends with
// the body: a call that then waits longer (a waiting claim) is answered,
// not cancelled by the deadline.
func TestBodyTimeoutSparesLongCalls(t *testing.T) {
	const bodyTime = 100 * time.Millisecond
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * bodyTime):
			_, _ = w.Write([]byte(`{"ok":true}`))
		case <-r.Context().Done():
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	e := newEnv(t, envOptions{bodyTimeout: bodyTime, mcp: slow})
	resp := e.do(t, request{method: http.MethodPost, path: "/mcp", body: `{}`, bearer: adminToken})
	if resp.status != http.StatusOK {
		t.Fatalf("a call waiting past the body's read time: %d %s", resp.status, resp.body)
	}
}

// Ensure a body announced large and not sent holds no memory for what did
// not arrive: 64 clients announcing 1 MiB each and sending one byte made
// the relay hold 64 MiB (a buffer of the announced size made at once) for
// the bodies' whole read time, without a token.
func TestAnnouncedBodyHoldsNoMemory(t *testing.T) {
	e := newEnv(t, envOptions{rateLimit: noRateLimit})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	const clients = 64
	for range clients {
		conn, err := net.Dial("tcp", e.host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// net/http says 100 Continue when the handler first reads the body:
		// by then its buffer is made.
		head := "POST /api/enroll HTTP/1.1\r\nHost: " + e.host + "\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\nExpect: 100-continue\r\n\r\n"
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		line, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(line, "100 Continue") {
			t.Fatalf("no 100 Continue: %q, %v", line, err)
		}
		if _, err := conn.Write([]byte("{")); err != nil {
			t.Fatal(err)
		}
	}
	if grew := heap() - min(before, heap()); grew > 16<<20 {
		t.Fatalf("heap grew %d MiB for %d bodies announced at 1 MiB and not sent", grew>>20, clients)
	}
}
