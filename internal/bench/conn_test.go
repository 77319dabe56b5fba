package bench

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer is an httptest server running h that counts the
// connections it accepted.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestConnPoolPost(t *testing.T) {
	big := strings.Repeat("x", 10_000) // written in parts: chunked
	cases := []struct {
		name     string
		handler  http.HandlerFunc
		want     string
		conns    int64 // accepted for three posts in a row
		wantCode int
	}{
		{"keep-alive", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.Write(append([]byte("echo "), b...))
		}, "echo {}", 1, 200},
		{"chunked", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, big[:5000])
			w.(http.Flusher).Flush()
			io.WriteString(w, big[5000:])
		}, big, 1, 200},
		{"server closes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		}, "bye", 3, 200},
		{"error status", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "nope", http.StatusTeapot)
		}, "nope\n", 1, http.StatusTeapot},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, conns := countingServer(t, c.handler)
			p, err := newConnPool(srv.URL, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			for range 3 {
				a, err := p.post(t.Context(), "/", "Content-Type: application/json\r\n", []byte("{}"))
				if err != nil {
					t.Fatal(err)
				}
				if a.status != c.wantCode || string(a.body) != c.want {
					t.Fatalf("answer = %d %.40q, want %d %.40q", a.status, a.body, c.wantCode, c.want)
				}
			}
			if n := conns.Load(); n != c.conns {
				t.Fatalf("%d connections for 3 posts, want %d", n, c.conns)
			}
		})
	}
}

// A connection the server closed while it sat idle (without saying so in
// its last answer) is replaced, and the post goes through.
func TestConnPoolReplacesAClosedIdleConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close() // one answer per connection, then gone
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	p, err := newConnPool("http://"+ln.Addr().String(), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	for i := range 3 {
		a, err := p.post(t.Context(), "/", "", nil)
		if err != nil || string(a.body) != "ok" {
			t.Fatalf("post %d: %q, %v", i, a.body, err)
		}
	}
	if n := accepted.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// A post whose context ends while it waits for the answer returns at once
// and closes its connection, which the server sees; the trace hears when
// the request was written.
func TestConnPoolPostCancelled(t *testing.T) {
	gone, stopped := make(chan struct{}), make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // net/http watches the connection once the body is read
		select {
		case <-r.Context().Done(): // the client went away
			close(gone)
		case <-stopped:
		}
	})
	t.Cleanup(func() { close(stopped) }) // before the server closes
	p, err := newConnPool(srv.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	ctx, cancel := context.WithCancel(t.Context())
	wrote := make(chan struct{})
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) }}
	errc := make(chan error, 1)
	go func() {
		_, err := p.post(httptrace.WithClientTrace(ctx, trace), "/", "", []byte("{}"))
		errc <- err
	}()
	select {
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was never written")
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("post did not return after its context ended")
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}
