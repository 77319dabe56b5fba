package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// walFrames reads a WAL file's header and counts the frames written since
// it last started over (those with the header's salt), and returns the
// salt, so that a caller can tell a WAL that started over from one that
// grew.
func walFrames(t *testing.T, path string) (frames int, salt []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 32 {
		t.Fatalf("%s: %d bytes, no WAL header", path, len(b))
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	salt = b[16:24]
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		if !bytes.Equal(b[off+8:off+16], salt) {
			break
		}
		frames++
	}
	return frames, bytes.Clone(salt)
}

// TestLifecyclePagesWritten counts the pages a task's lifecycle writes to
// the WAL, each operation committed alone: every changed page is written
// whole and synced, so on a disk they are most of what a commit costs
// (docs/performance.md). Four pairs of agents take turns, so that entries
// kept per agent land on pages of their own, as they do with many agents.
// The bound fails if an index keyed on a value that changes with every
// update comes back: migration 0011 took this lifecycle from 53 pages to 41
// (under the bench's load, where commits share pages, from 29 to 16).
func TestLifecyclePagesWritten(t *testing.T) {
	e := newEnv(t, store.Options{})
	const pairs = 4
	for i := range pairs {
		e.agents(fmt.Sprintf("sender-%d", i), fmt.Sprintf("worker-%d", i))
	}
	lifecycle := func(i int) {
		s, w := fmt.Sprintf("sender-%d", i%pairs), fmt.Sprintf("worker-%d", i%pairs)
		task := e.post(s, w, fmt.Sprintf("Task %d", i), 0)
		e.mustClaim(w)
		e.report(w, task.ID, relay.ReportProgress, "Halfway.")
		e.report(w, task.ID, relay.ReportCompleted, "Done.")
		if u := e.updates(s); len(u.Updates) != 3 {
			t.Fatalf("sender read %d updates, want 3", len(u.Updates))
		}
	}
	for i := range 400 { // indexes a few pages deep
		lifecycle(i)
	}

	// A reader holding a snapshot keeps every frame written after it in
	// the WAL: a checkpoint may copy none of them and the WAL cannot start
	// over. The write just before makes sure the snapshot is in the WAL,
	// and a first reader, holding the empty WAL's snapshot until the second
	// has its own, keeps the writer's idle checkpoint from copying that
	// write first (a reader that finds the WAL all copied reads the
	// database file alone, and holds nothing in the WAL).
	raw := rawDB(t, e.path)
	ctx := context.Background()
	if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	first, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	var n int
	if err := first.QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Heartbeat(ctx, "sender-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		t.Fatal(err) // as the writer's idle checkpoint may, here
	}
	reader, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback()
	if err := reader.QueryRowContext(ctx, "SELECT COUNT(*) FROM tasks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := first.Rollback(); err != nil {
		t.Fatal(err)
	}
	before, salt := walFrames(t, e.path+"-wal")

	const measured = 100
	for i := range measured {
		lifecycle(400 + i)
	}
	after, salt2 := walFrames(t, e.path+"-wal")
	if !bytes.Equal(salt, salt2) {
		t.Fatal("the WAL started over under the reader's snapshot")
	}
	perLifecycle := float64(after-before) / measured
	t.Logf("%.1f pages written per lifecycle (%d frames for %d lifecycles)", perLifecycle, after-before, measured)
	if perLifecycle > 46 {
		t.Errorf("a lifecycle writes %.1f pages, committed one operation at a time; want at most 46", perLifecycle)
	}
}

// Migration 0011 builds the new task indexes from the rows already there:
// after the upgrade an expired lease taken before it is found and
// requeued, the queue keeps its order, the open-task cap counts the tasks
// posted before it and read_updates returns the events written before it.
func TestMigrationBuildsTaskIndexes(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ann", "bob")
	set, err := e.db.Settings(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	set.MaxOpenTasksPerSender = 4
	if _, err := e.db.UpdateSettings(e.ctx, set); err != nil {
		t.Fatal(err)
	}
	leased := e.post("ann", "bob", "leased", 2)
	e.claimLease("bob", 60)
	low := e.post("ann", "bob", "low", 1)
	high := e.post("ann", "bob", "high", 3)
	normal := e.post("ann", "bob", "normal", 2)
	e.downgrade(undoTaskIndexes + `PRAGMA user_version = 10`)

	_, err = e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "ann", RecipientSlug: "bob", Title: "fifth", Instructions: "x"})
	wantCode(t, err, relay.ETooManyOpenTasks)
	e.clock.Advance(2 * time.Minute)
	var order []string
	for range 4 {
		order = append(order, e.mustClaim("bob").Title)
	}
	if want := []string{high.Title, leased.Title, normal.Title, low.Title}; !slices.Equal(order, want) {
		t.Errorf("claimed %v after the upgrade, want %v", order, want)
	}
	u := e.updates("ann")
	if len(u.Updates) == 0 || u.Updates[0].Type != relay.EventTaskClaimed || u.Updates[0].TaskID != leased.ID {
		t.Errorf("ann's first update after the upgrade: %+v; want the claim of %s from before it", u.Updates, leased.ID)
	}
}
