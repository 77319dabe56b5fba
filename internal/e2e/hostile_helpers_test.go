//go:build linux

package e2e_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	_ "github.com/mattn/go-sqlite3"

	"github.com/crosschat/crosschat-relay/internal/bench"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// userRelay is the real binary's `serve`, run as an unprivileged user:
// nobody (uid 65534) when the tests run as root, else the tests' own user.
// It has a home folder of its own (HOME), the data folder in it, and runs
// its CLI verbs as the same user, so what a sandboxed run of it can reach
// is what it would be on a user's computer.
type userRelay struct {
	base, home, data, bin string
	port                  int
	cred                  *syscall.Credential
	proc                  *relayProc
}

// hostileUID is the user the hostile tests run the relay as.
func hostileCred() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
}

// newUserRelay makes the user's home folder (base/home, with the data
// folder in .local/share/crosschat-relay) and a copy of the relay binary
// the user may run (base/bin, outside the home), owned by the user. It
// does not start the relay (start).
func newUserRelay(t *testing.T) *userRelay {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the relay binary")
	}
	src := relayBinary(t)
	base, err := os.MkdirTemp("", "crosschat-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	if base, err = filepath.EvalSymlinks(base); err != nil {
		t.Fatal(err)
	}
	u := &userRelay{base: base, home: filepath.Join(base, "home"), bin: filepath.Join(base, "bin", "crosschat-relay"), cred: hostileCred()}
	u.data = filepath.Join(u.home, ".local", "share", "crosschat-relay")
	for _, d := range []string{filepath.Dir(u.bin), u.data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(u.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(u.data, 0o700); err != nil {
		t.Fatal(err)
	}
	u.chown(t, u.home)
	return u
}

// chown gives the user every file under p (nothing when the tests are not root).
func (u *userRelay) chown(t *testing.T, p string) {
	t.Helper()
	if u.cred == nil {
		return
	}
	err := filepath.Walk(p, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(u.cred.Uid), int(u.cred.Gid))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// write writes a file of the user's (made with its folders), mode perm.
func (u *userRelay) write(t *testing.T, p, body string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	// It and the folders made for it (not what else is in them: the
	// running relay writes its data folder).
	if u.cred == nil {
		return
	}
	for d := p; d != u.base && strings.HasPrefix(d, u.base); d = filepath.Dir(d) {
		if err := os.Lchown(d, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// env is the user's environment: HOME, PATH and nothing of the relay's.
func (u *userRelay) env() []string {
	return []string{"HOME=" + u.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "USER=hostile", "LOGNAME=hostile"}
}

// start runs `serve` as the user, with extra open descriptors (ExtraFiles:
// entry i is descriptor 3+i, nil entries closed), and waits for /health.
func (u *userRelay) start(t *testing.T, extra ...*os.File) {
	t.Helper()
	var last string
	for range 3 {
		u.port = testkit.FreePort(t)
		p := &relayProc{port: u.port, url: "http://127.0.0.1:" + strconv.Itoa(u.port), out: &testkit.Buffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(u.bin, "serve", "--host", "127.0.0.1", "--port", strconv.Itoa(u.port), "--data-dir", u.data)
		p.cmd.Env, p.cmd.Dir = u.env(), u.home
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		p.cmd.ExtraFiles = extra
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start relay: %v", err)
		}
		go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			if !p.exited() {
				_ = p.cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-p.done:
				case <-time.After(20 * time.Second):
					_ = p.cmd.Process.Kill()
					<-p.done
				}
			}
		})
		c := bench.NewClient(p.url, 2)
		deadline := time.Now().Add(30 * time.Second)
		for c.Health(context.Background()) != nil && !p.exited() && time.Now().Before(deadline) {
			select {
			case <-p.done:
			case <-time.After(20 * time.Millisecond):
			}
		}
		c.Close()
		if !p.exited() {
			u.proc = p
			return
		}
		if last = p.out.String(); !strings.Contains(last, "address already in use") {
			break
		}
	}
	t.Fatalf("relay exited during start-up\n%s", last)
}

// stop ends `serve` (SIGTERM) and waits for it.
func (u *userRelay) stop(t *testing.T) {
	t.Helper()
	if u.proc == nil || u.proc.exited() {
		return
	}
	_ = u.proc.cmd.Process.Signal(syscall.SIGTERM)
	_ = u.proc.wait(t, 30*time.Second)
}

// run runs a CLI verb as the user against the relay and returns its
// standard output, standard error and exit code.
func (u *userRelay) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	args = append(args, "--port", strconv.Itoa(u.port), "--data-dir", u.data)
	cmd := exec.Command(u.bin, args...)
	cmd.Env, cmd.Dir = u.env(), u.home
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("crosschat-relay %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errs.String(), code
}

// must runs a CLI verb that must succeed and returns its output.
func (u *userRelay) must(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := u.run(t, "", args...)
	if code != 0 {
		t.Fatalf("crosschat-relay %s: exit %d\n%s\n%s\nrelay log:\n%s", strings.Join(args, " "), code, out, errs, u.proc.out.String())
	}
	return out
}

// agent adds an agent and returns its token.
func (u *userRelay) agent(t *testing.T, slug string) testAgent {
	t.Helper()
	out := u.must(t, "agents", "add", slug, "--name", slug, "--model", "sh", "--capability", "text-output", "--json")
	var reveal struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(out), &reveal); err != nil || !strings.HasPrefix(reveal.Token, relay.AgentTokenPrefix) {
		t.Fatalf("agents add %s: %v: %s", slug, err, out)
	}
	return testAgent{slug: slug, token: reveal.Token}
}

// call makes one MCP tool call with token; a tool error fails the test
// unless out is a *toolError.
func (u *userRelay) call(t *testing.T, token, tool string, args map[string]any, out any) {
	t.Helper()
	res := mcpCall(t, "http://127.0.0.1:"+strconv.Itoa(u.port)+"/mcp", token, tool, args)
	if res.IsError {
		t.Fatalf("%s: %+v", tool, res.Content)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
}

// mcpCall makes one MCP tool call on url with a bearer token.
func mcpCall(t *testing.T, url, token, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	trans, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start MCP: %v", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "hostile-e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// task posts a task from the sender to the worker's agent and waits until
// it is completed or blocked; it returns the task with the text of its
// last report (message and result).
func (u *userRelay) task(t *testing.T, from testAgent, to, title string) (relay.Task, string) {
	t.Helper()
	var posted relay.Task
	u.call(t, from.token, "post_task", map[string]any{"senderSlug": from.slug, "recipientSlug": to, "title": title,
		"instructions": "Run the worker's program."}, &posted)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var got relay.Task
		u.call(t, from.token, "get_task", map[string]any{"taskId": posted.ID}, &got)
		if got.Status == relay.StatusCompleted || got.Status == relay.StatusBlocked {
			text := ""
			if n := len(got.Reports); n > 0 {
				text = got.Reports[n-1].Message + "\n" + got.Reports[n-1].Result
			}
			return got, text
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %q still %s\nrelay log:\n%s", title, got.Status, u.proc.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// script writes an executable shell script of the user's (outside its
// home, so no run's folder holds it) and returns its path.
func (u *userRelay) script(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(u.base, "scripts", name)
	u.write(t, p, "#!/bin/sh\ncat >/dev/null\n"+body, 0o755)
	if u.cred != nil {
		if err := os.Chown(filepath.Dir(p), int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// readAll reads a file the test made (for the tests' own checks).
func readAll(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	return string(b)
}

// setWorkdir sets a worker's working folder in the stopped relay's
// database, as an older version that checked it only when saved left it.
func setWorkdir(t *testing.T, u *userRelay, slug, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(u.data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE workers SET workdir = ?, extra_dirs = '[]', pinned_paths = '{}' WHERE agent_slug = ?`, dir, slug); err != nil {
		if _, err := db.Exec(`UPDATE workers SET workdir = ?, extra_dirs = '[]' WHERE agent_slug = ?`, dir, slug); err != nil {
			t.Fatal(err)
		}
	}
}
