package mesh

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// killChildEnv carries "data dir|NATS URL|relay A's id" to the child of
// TestKillMidBatch that runs relay B.
const killChildEnv = "CROSSCHAT_MESH_KILL_CHILD"

// killAckWait is the consumer's acknowledgement wait in TestKillMidBatch:
// what a killed relay had delivered comes again that soon.
const killAckWait = 2 * time.Second

// TestKillMidBatch runs relay B in a child process and stops its store
// from committing (the test holds the database's write lock) while relay A
// posts tasks to it: B takes them from the stream and applies them in a
// batch that cannot commit, and none is acknowledged meanwhile. The test
// kills B there (SIGKILL) and starts it again from its folder: every task
// arrives, once.
func TestKillMidBatch(t *testing.T) {
	if v := os.Getenv(killChildEnv); v != "" {
		killChild(t, v)
		return
	}
	old := ackWait
	ackWait = killAckWait
	t.Cleanup(func() { ackWait = old })
	srv := startServer(t, t.TempDir(), 0)
	t.Cleanup(func() { srv.Shutdown() })
	a := startRelay(t, "relay-a", "", srv.ClientURL())
	createAgent(t, a, "alice")
	ctx := t.Context()

	bdir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidBatch$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+bdir+"|"+srv.ClientURL()+"|"+a.node.id.ID)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(out)
	next := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
		}
		t.Fatalf("the child relay never said %q; its stderr:\n%s", prefix, stderr.String())
		return ""
	}
	bID := next("relay ")
	trustEventually(t, a, bID)
	next("trusted")
	knows(t, a, "bob", "relay-b")

	cons, err := jetStreamClient(t, srv.ClientURL()).Consumer(ctx, StreamName, consumerName(bID))
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	floor := info.AckFloor.Stream

	// B's store cannot commit from here on.
	raw, err := sql.Open("sqlite3", "file:"+filepath.Join(bdir, "relay.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	lock, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const n = 5
	var ids []string
	for i := range n {
		ids = append(ids, post(t, a, "alice", "bob", fmt.Sprintf("Mid-batch %d", i)).ID)
	}
	// The tasks travel in n messages or fewer (a list carries what one
	// read of A's outbox found).
	var carrying int
	eventually(t, "B holds every task delivered and none acknowledged", func() (bool, string) {
		depth, err := a.db.Mesh().OutboxDepth(ctx)
		if err != nil {
			return false, err.Error()
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		carrying = info.NumAckPending
		return depth == 0 && carrying >= 1 && info.NumPending == 0 && info.AckFloor.Stream == floor,
			fmt.Sprintf("A's outbox %d, ack pending %d, pending %d, ack floor %d (was %d)", depth, info.NumAckPending, info.NumPending, info.AckFloor.Stream, floor)
	})
	var stored int
	if err := lock.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE title LIKE 'Mid-batch %'`).Scan(&stored); err != nil || stored != 0 {
		t.Fatalf("B's database holds %d of the tasks (%v) before any commit", stored, err)
	}
	if info, err := cons.Info(ctx); err != nil || info.AckFloor.Stream != floor || info.NumAckPending != carrying {
		t.Fatalf("acknowledged before a commit: %+v, %v", info, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	lock.Close()

	b := startRelay(t, "relay-b", bdir, srv.ClientURL())
	for _, id := range ids {
		arrives(t, b, id)
	}
	eventually(t, "every message acknowledged", func() (bool, string) {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0, fmt.Sprintf("%+v %v", info, err)
	})
	ts, err := b.svc.ListTasks(ctx, relay.TaskFilter{Agent: "bob", Limit: 50})
	if err != nil || len(ts) != n {
		t.Fatalf("B's tasks = %d, %v; want %d, each once", len(ts), err, n)
	}
}

// trustEventually has r trust relay id once it has seen it.
func trustEventually(t *testing.T, r *testRelay, id string) {
	t.Helper()
	eventually(t, r.name+" trusts "+id, func() (bool, string) {
		_, err := r.node.SetTrust(t.Context(), id, relay.RelayTrusted, "")
		return err == nil, fmt.Sprint(err)
	})
}

// killChild is relay B of TestKillMidBatch: it joins, says its id, trusts
// relay A, says so and runs until it is killed.
func killChild(t *testing.T, v string) {
	f := strings.Split(v, "|")
	if len(f) != 3 {
		t.Fatalf("%s=%q", killChildEnv, v)
	}
	ackWait = killAckWait
	b := startRelay(t, "relay-b", f[0], f[1])
	createAgent(t, b, "bob")
	fmt.Printf("relay %s\n", b.node.id.ID)
	trustEventually(t, b, f[2])
	fmt.Println("trusted")
	<-context.Background().Done() // until killed
}
