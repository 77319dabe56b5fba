package store_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// BenchmarkLifecycle measures one full task round trip: post, claim, report
// completed, and the sender reading its updates (four commits).
func BenchmarkLifecycle(b *testing.B) {
	db := openBench(b, filepath.Join(b.TempDir(), "relay.db"))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lifecycle(b, ctx, db)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lifecycles/s")
}

// BenchmarkLifecycleGrown is BenchmarkLifecycle in a database that already
// holds 20,000 finished lifecycles (seeded untimed), as a relay in use for
// a while does: its indexes no longer fit in a few pages.
func BenchmarkLifecycleGrown(b *testing.B) {
	db := openBench(b, filepath.Join(b.TempDir(), "relay.db"))
	ctx := context.Background()
	for range 20_000 {
		lifecycle(b, ctx, db)
	}
	b.ReportAllocs()
	for b.Loop() { // seeded once, not for every b.N tried
		lifecycle(b, ctx, db)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lifecycles/s")
}

// lifecycle posts a task from sender to worker, claims it, completes it and
// reads the sender's updates.
func lifecycle(b *testing.B, ctx context.Context, db *store.DB) {
	posted, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "sender", RecipientSlug: "worker", Title: "Task", Instructions: "Do it"})
	if err != nil {
		b.Fatal(err)
	}
	task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
	if err != nil || task == nil || task.ID != posted.ID {
		b.Fatalf("claim = %v, %v", task, err)
	}
	if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "worker", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "Done", Result: "ok"}); err != nil {
		b.Fatal(err)
	}
	u, err := db.ReadUpdates(ctx, "sender", 0)
	if err != nil || len(u.Updates) != 2 {
		b.Fatalf("updates = %+v, %v", u, err)
	}
}

// BenchmarkClaim measures one claim from a queue of n tasks. The claimed
// task is put back in the queue (untimed, through a side connection, so it
// gathers no reports) to keep the queue at n.
func BenchmarkClaim(b *testing.B) {
	sizes := []int{10, 100_000}
	if *claimMillion {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("queued=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "relay.db")
			db := openBench(b, path)
			ctx := context.Background()
			seedQueue(b, path, n)
			raw := openRaw(b, path)
			defer raw.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "worker"})
				if err != nil || task == nil {
					b.Fatalf("claim = %v, %v", task, err)
				}
				b.StopTimer()
				if _, err := raw.Exec(`UPDATE tasks SET status = 'queued', claimed_at = NULL, claimed_via = NULL, lease_expires_at = NULL WHERE id = ?`, task.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkReadUpdatesBehind measures read_updates for an agent that has
// nothing to read while the journal is full of other agents' events (the
// default bound, 10,000). The journal has no index by recipient (migration
// 0011): the first such read after a start walks all of it, the most any
// read_updates walks, and each later one starts where the last ended
// (DB.walked), so b.N reads cost one walk and b.N short reads.
func BenchmarkReadUpdatesBehind(b *testing.B) {
	path := filepath.Join(b.TempDir(), "relay.db")
	db := openBench(b, path)
	ctx := context.Background()
	if _, err := db.RegisterAgent(ctx, relay.RegisterInput{Slug: "idle", DisplayName: "idle", ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
		b.Fatal(err)
	}
	raw := openRaw(b, path)
	defer raw.Close()
	if _, err := raw.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO events (recipient_slug, type, task_id, summary, created_at)
		SELECT 'sender', 'task_completed', printf('task-%d', i), 'worker completed “Task”.', '2026-01-01T00:00:00.000Z' FROM n`,
		relay.DefaultMaxEvents); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		u, err := db.ReadUpdates(ctx, "idle", 0)
		if err != nil || len(u.Updates) != 0 {
			b.Fatalf("updates = %+v, %v", u, err)
		}
	}
}

// claimMillion adds a queue of 1,000,000 tasks to BenchmarkClaim. Seeding
// it takes minutes, and the benchmark re-seeds for every b.N it tries, so
// it is opt-in: go test -bench 'BenchmarkClaim$' ./internal/store -args -claim-million
var claimMillion = flag.Bool("claim-million", false, "BenchmarkClaim: also measure with 1,000,000 queued tasks")

// seedQueue bulk-inserts n queued tasks for worker in one transaction.
func seedQueue(b *testing.B, path string, n int) {
	b.Helper()
	raw := openRaw(b, path)
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		b.Fatal(err)
	}
	stmt, err := tx.Prepare(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status, created_at, updated_at)
		VALUES (?, 'sender', 'worker', ?, 'Do it', '[]', ?, 'queued', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		ts := relay.FormatTime(base.Add(time.Duration(i) * time.Millisecond))
		if _, err := stmt.Exec(relay.NewID(), fmt.Sprintf("task %d", i), 1+i%3, ts, ts); err != nil {
			b.Fatal(err)
		}
	}
	if err := stmt.Close(); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

func openRaw(b *testing.B, path string) *sql.DB {
	b.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000&_txlock=immediate&_synchronous=FULL")
	if err != nil {
		b.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	return raw
}

// BenchmarkCommitBaseline is SQLite's own bound on this disk: one
// single-row INSERT transaction per op in WAL mode at synchronous=FULL, the
// store's settings. Compare the store's per-commit cost with it.
func BenchmarkCommitBaseline(b *testing.B) {
	path := filepath.Join(b.TempDir(), "base.db")
	raw, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx, err := raw.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO t (v) VALUES (?)`, "row"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// openBench opens a store at path, closed when b ends, with the agents
// "sender" and "worker".
func openBench(b *testing.B, path string) *store.DB {
	b.Helper()
	db, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	for _, s := range []string{"sender", "worker"} {
		if _, err := db.RegisterAgent(context.Background(), relay.RegisterInput{Slug: s, DisplayName: s, ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
			b.Fatal(err)
		}
	}
	return db
}
