package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/cli"
)

// padReader streams prefix, n bytes of 'x' and suffix without holding them.
type padReader struct {
	prefix, suffix string
	n              int
	off            int
}

func (p *padReader) Read(b []byte) (int, error) {
	total := len(p.prefix) + p.n + len(p.suffix)
	if p.off >= total {
		return 0, io.EOF
	}
	i := 0
	for i < len(b) && p.off < total {
		switch {
		case p.off < len(p.prefix):
			b[i] = p.prefix[p.off]
		case p.off < len(p.prefix)+p.n:
			b[i] = 'x'
		default:
			b[i] = p.suffix[p.off-len(p.prefix)-p.n]
		}
		i++
		p.off++
	}
	return i, nil
}

// TestTenMiBMCPBodyGets413AndHeapStaysBounded posts a 10 MiB JSON-RPC
// request (streamed, no Content-Length) to the real /mcp with a valid
// token: the relay answers 413 with a JSON-RPC error and allocates far less
// than the body's size.
func TestTenMiBMCPBodyGets413AndHeapStaysBounded(t *testing.T) {
	r := startRelay(t)
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	const size = 10 << 20
	send := func() (int, []byte) {
		body := &padReader{prefix: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`, n: size, suffix: `"}}`}
		req, err := http.NewRequest(http.MethodPost, r.Config().MCPURL(), io.NopCloser(body))
		noErr(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			// The server may close the connection while the client still
			// writes; that is a refusal too, but the status is what we check.
			t.Fatalf("post: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, b
	}
	send() // warm up the connection pool and handler paths
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	status, b := send()
	runtime.ReadMemStats(&after)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %.200s", status, b)
	}
	var rpc struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &rpc); err != nil || rpc.JSONRPC != "2.0" || rpc.Error.Code == 0 || !strings.Contains(rpc.Error.Message, "too large") {
		t.Fatalf("not a JSON-RPC error: %s (%v)", b, err)
	}
	// Client and server share this process: everything both allocated for
	// the 10 MiB request stays well under its size.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6<<20 {
		t.Fatalf("the request allocated %d bytes for a %d-byte body", alloc, size)
	}
}

// captureServer answers 200 to everything and records Authorization
// headers: a program that took the relay's address.
func captureServer(t *testing.T, ln net.Listener) func() []string {
	t.Helper()
	var mu sync.Mutex
	seen := []string{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			seen = append(seen, a)
		}
		mu.Unlock()
		io.WriteString(w, `[]`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestDotEnvCannotRedirectAdminToken: a .env in the working folder (say, of
// a cloned repository) names another address for the relay; `tasks list`
// ignores it, so the listener there receives no admin token and the verb
// reaches the real relay.
func TestDotEnvCannotRedirectAdminToken(t *testing.T) {
	r := startRelay(t)
	port := strconv.Itoa(r.Config().Port)
	ln, err := net.Listen("tcp", "127.0.0.2:"+port)
	if err != nil {
		t.Skipf("no second loopback address here: %v", err)
	}
	seen := captureServer(t, ln)
	dir := t.TempDir()
	noErr(t, os.WriteFile(filepath.Join(dir, ".env"), []byte("CROSSCHAT_HOST=127.0.0.2\nCROSSCHAT_DATA_DIR="+dir+"\n"), 0o600))
	t.Chdir(dir)
	var out, errb strings.Builder
	code := cli.Command([]string{"tasks", "list", "--port", port, "--data-dir", r.Config().DataDir}, "test", &out, &errb)
	if len(seen()) != 0 {
		t.Fatalf("the .env address received %q", seen())
	}
	if code != 0 {
		t.Fatalf("tasks list: exit %d: %s", code, errb.String())
	}
}

// TestCLIVerbSendsNoAdminTokenToImpostor: something else listens where the
// relay should be; the verb fails and the listener never sees the token.
func TestCLIVerbSendsNoAdminTokenToImpostor(t *testing.T) {
	r := startRelay(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	noErr(t, err)
	seen := captureServer(t, ln)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"tasks", "list"}, {"agents", "list"}, {"quit"}, {"workers", "list"},
		{"invites", "create"}, {"status"},
	} {
		var out, errb strings.Builder
		code := cli.Command(append(args, "--port", port, "--data-dir", r.Config().DataDir), "test", &out, &errb)
		if len(seen()) != 0 {
			t.Fatalf("%v: the impostor received %q", args, seen())
		}
		if code == 0 && args[0] != "status" {
			t.Fatalf("%v: exit 0 against an impostor: %s", args, out.String())
		}
	}
}

// TestMalformedDotEnvDoesNotBreakCommands: a broken .env in the working
// folder is not read by the verbs; serve reads one only with --env-file,
// and then names the bad line.
func TestMalformedDotEnvDoesNotBreakCommands(t *testing.T) {
	r := startRelay(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, ".env")
	noErr(t, os.WriteFile(bad, []byte("# ok\nthis is not a setting\n"), 0o600))
	t.Chdir(dir)
	var out, errb strings.Builder
	if code := cli.Command([]string{"token", "--data-dir", r.Config().DataDir}, "test", &out, &errb); code != 0 {
		t.Fatalf("token with a broken .env around: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := app.Serve([]string{"--env-file", bad, "--data-dir", filepath.Join(dir, "d")}, nil, "test", &out, &errb); code != 2 || !strings.Contains(errb.String(), ".env:2: expected KEY=VALUE") {
		t.Fatalf("serve --env-file with a bad line: exit %d: %s", code, errb.String())
	}
	errb.Reset()
	if code := app.Serve([]string{"--env-file", filepath.Join(dir, "missing.env")}, nil, "test", &out, &errb); code != 2 || !strings.Contains(errb.String(), "--env-file") {
		t.Fatalf("serve --env-file missing: exit %d: %s", code, errb.String())
	}
	// A mistyped flag in the words the verbs use (the flag package's were
	// "flag provided but not defined: -prot").
	for args, want := range map[string]string{"--prot 5000": "unknown flag --prot", "--port abc": `--port "abc" is not a whole number`} {
		errb.Reset()
		if code := app.Serve(strings.Fields(args), nil, "test", &out, &errb); code != 2 || errb.String() != "crosschat-relay serve: "+want+"\n" {
			t.Fatalf("serve %s: exit %d: %q", args, code, errb.String())
		}
	}
}
