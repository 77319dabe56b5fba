//go:build unix

package store_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// BenchmarkInsights times each chart aggregate (insights.go) on a relay
// holding 100,000 tasks of 20 agents, seeded untimed, in conversations of
// ten hand-offs, with a progress report on every claimed task and an
// outcome report on every completed or blocked one. spread=30d lays the
// tasks over the default retention of 30 days, as a relay in steady use
// holds them; spread=24h puts all of them in every window, the most any
// query reads. Besides the time per query it reports the process's CPU
// time per query (cpu-ms/op), which the other work on a shared machine
// does not inflate (docs/performance.md, How to measure).
//
//	go test -run '^$' -bench BenchmarkInsights -benchtime 20x ./internal/store/
func BenchmarkInsights(b *testing.B) {
	const tasks = 100_000
	for _, spread := range []time.Duration{30 * 24 * time.Hour, 24 * time.Hour} {
		name := fmt.Sprintf("spread=%dd", int(spread.Hours()/24))
		if spread < 48*time.Hour {
			name = fmt.Sprintf("spread=%dh", int(spread.Hours()))
		}
		b.Run(name, func(b *testing.B) {
			path := b.TempDir() + "/relay.db"
			db := openBench(b, path)
			now := time.Now()
			root := seedInsights(b, path, tasks, now, spread)
			hours, err := relay.AlignedWindow(now, 0, time.Hour, 24)
			if err != nil {
				b.Fatal(err)
			}
			days, err := relay.AlignedWindow(now, 0, 24*time.Hour, 7)
			if err != nil {
				b.Fatal(err)
			}
			queries := []struct {
				name string
				run  func() (int, error)
			}{
				{"throughput-24h", func() (int, error) {
					r, err := db.Throughput(b.Context(), hours)
					return len(r), err
				}},
				{"latencies-7d", func() (int, error) {
					r, err := db.Latencies(b.Context(), now.Add(-7*24*time.Hour), now)
					return len(r), err
				}},
				{"open-work", func() (int, error) {
					r, err := db.OpenWork(b.Context())
					return len(r), err
				}},
				{"outcomes-7d", func() (int, error) {
					r, err := db.Outcomes(b.Context(), days)
					return len(r), err
				}},
				{"conversation", func() (int, error) {
					r, err := db.Conversation(b.Context(), root)
					return len(r.Tasks), err
				}},
			}
			for _, q := range queries {
				b.Run(q.name, func(b *testing.B) {
					cpu := cpuTime(b)
					for b.Loop() {
						n, err := q.run()
						if err != nil || n == 0 {
							b.Fatalf("%s: %d rows, %v", q.name, n, err)
						}
					}
					b.ReportMetric(float64((cpuTime(b)-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/op")
				})
			}
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedInsights writes n tasks to the store's file, posted evenly over the
// spread before now, and returns the id of one conversation's first task.
// Task i goes to agent-(i mod 20); by i mod 20 it is queued (0), claimed
// (1), blocked (2), cancelled (3) or completed; each ten make one
// conversation, each task handed off from the one before.
func seedInsights(b *testing.B, path string, n int, now time.Time, spread time.Duration) string {
	b.Helper()
	raw := openRaw(b, path)
	defer raw.Close()
	tx, err := raw.Begin()
	if err != nil {
		b.Fatal(err)
	}
	task, err := tx.Prepare(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, status,
		created_at, updated_at, claimed_at, parent_task_id, depth, conversation_id, hops)
		VALUES (?, 'sender', ?, ?, 'Do it', ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	report, err := tx.Prepare(`INSERT INTO reports (id, task_id, kind, message, created_at) VALUES (?, ?, ?, 'Noted.', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	start := now.Add(-spread)
	step := spread / time.Duration(n)
	var root, parent string
	var first string
	for i := range n {
		id := relay.NewID()
		created := start.Add(time.Duration(i) * step)
		claimed := created.Add(time.Duration(i%600) * time.Second)
		updated := claimed.Add(time.Duration(i%3600) * time.Second)
		status := [...]relay.TaskStatus{relay.StatusQueued, relay.StatusClaimed, relay.StatusBlocked, relay.StatusCancelled}[min(i%20, 3)]
		if i%20 >= 4 {
			status = relay.StatusCompleted
		}
		var claimedAt, parentID, conv any
		hops := i % 10
		if hops == 0 {
			root, parent = id, ""
			if first == "" {
				first = id
			}
		} else {
			parentID, conv = parent, root
		}
		if status != relay.StatusQueued && status != relay.StatusCancelled {
			claimedAt = relay.FormatTime(claimed)
		} else {
			updated = created
		}
		if _, err := task.Exec(id, fmt.Sprintf("agent-%02d", i%20), fmt.Sprintf("Task %d", i), string(status),
			relay.FormatTime(created), relay.FormatTime(updated), claimedAt, parentID, hops, conv, hops); err != nil {
			b.Fatal(err)
		}
		if claimedAt != nil {
			if _, err := report.Exec(relay.NewID(), id, relay.ReportProgress, relay.FormatTime(claimed)); err != nil {
				b.Fatal(err)
			}
		}
		if status == relay.StatusCompleted || status == relay.StatusBlocked {
			if _, err := report.Exec(relay.NewID(), id, string(status), relay.FormatTime(updated)); err != nil {
				b.Fatal(err)
			}
		}
		parent = id
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	// As the writer does at its first idle moment: the reads then find the
	// pages in the database file, not in a WAL of 100,000 tasks.
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return first
}
