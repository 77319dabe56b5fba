package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// killChildEnv names the database a re-run of this test binary writes to
// as the child of TestKillMidBatch.
const killChildEnv = "CROSSCHAT_STORE_KILL_CHILD"

const (
	killAcked   = 80 // posts the child has answered before the batch it dies in
	killInBatch = 6  // posts that run inside that batch, never committed
)

// TestKillMidBatch runs the store in a child process, which commits posts
// from eight goroutines (group-committed, each printed once answered), then
// opens a batch that runs more posts in their savepoints and stops before
// its COMMIT. The parent kills the child with SIGKILL right there and opens
// the database again: every answered post is in it, and nothing of the
// batch is, neither its posts nor its first write.
func TestKillMidBatch(t *testing.T) {
	if path := os.Getenv(killChildEnv); path != "" {
		killChild(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "relay.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	registerAgents(t, db, "alice", "bob")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestKillMidBatch$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 2*killAcked) // never blocks the reader
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()

	acked := map[string]string{} // task id → title
	inBatch := -1
	deadline := time.After(2 * time.Minute)
	for inBatch < 0 {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("the child ended before its last batch:\n%s", stderr.String())
			}
			switch f := strings.SplitN(line, " ", 3); f[0] {
			case "acked":
				acked[f[1]] = f[2]
			case "stats":
				t.Logf("the child's answered writes so far: %s in %s batches", f[1], f[2])
			case "in-batch":
				if inBatch, err = strconv.Atoi(f[1]); err != nil {
					t.Fatalf("bad line %q", line)
				}
			}
		case <-deadline:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no batch held open in 2 minutes; %d posts answered:\n%s", len(acked), stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child did not die of SIGKILL: %v\n%s", err, stderr.String())
	}
	// The batch had run its first write and every post in it: the kill fell
	// between their statements and the COMMIT.
	if inBatch != killInBatch {
		t.Fatalf("the held batch had run %d posts, want %d", inBatch, killInBatch)
	}
	if len(acked) != killAcked {
		t.Fatalf("%d posts answered before the batch, want %d", len(acked), killAcked)
	}

	if err := IntegrityCheck(path); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
	db, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for id, title := range acked {
		task, err := db.GetTask(context.Background(), "alice", id)
		if err != nil {
			t.Errorf("answered post %s (%s): %v", id, title, err)
		} else if task.Title != title || task.Status != relay.StatusQueued {
			t.Errorf("answered post %s is %q (%s), want %q queued", id, task.Title, task.Status, title)
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM tasks`); n != killAcked {
		t.Errorf("%d tasks after the kill, want the %d answered", n, killAcked)
	}
	if n := countRows(t, db, `SELECT count(*) FROM tasks WHERE title LIKE 'in batch %'`); n != 0 {
		t.Errorf("%d posts of the killed batch were committed", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM agents WHERE display_name = 'held'`); n != 0 {
		t.Errorf("the killed batch's first write was committed")
	}
}

// killChild is the child's side: it never returns while the parent waits.
func killChild(t *testing.T, path string) {
	keepBatchesOpen(t)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	post := func(i int, title string) (relay.Task, error) {
		from, to := "alice", "bob"
		if i%2 == 1 {
			from, to = to, from
		}
		return db.PostTask(ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "survive"})
	}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < killAcked; i += 8 {
				title := fmt.Sprintf("acked %d", i)
				task, err := post(i, title)
				if err != nil {
					t.Errorf("post %d: %v", i, err)
					return
				}
				say("acked %s %s", task.ID, title)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	st := db.WriteStats()
	say("stats %d %d", st.Writes, st.Batches)

	// The batch that dies: a held first write, the posts queued behind it,
	// then a last write that counts the posts the batch ran and stops there.
	let, _ := startHeldWrite(db, nil)
	for i := range killInBatch {
		go post(i, fmt.Sprintf("in batch %d", i))
	}
	waitQueued(t, db, 1+killInBatch) // the held write counts until answered
	go db.write(ctx, "stop", func(tx *tx) error {
		var n int
		if err := tx.tx.QueryRowContext(tx.ctx, `SELECT count(*) FROM tasks WHERE title LIKE 'in batch %'`).Scan(&n); err != nil {
			return err
		}
		say("in-batch %d", n)
		select {} // until the parent's SIGKILL
	})
	waitQueued(t, db, 2+killInBatch)
	let()
	select {}
}
