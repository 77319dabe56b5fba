package store_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func TestAppendActivity(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Build", 0)
	other := e.post("operator", "builder", "Other", 0)
	changes, stop := e.db.Subscribe(16)
	defer stop()

	if got, err := e.db.Activity(e.ctx, task.ID); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Activity before any = %#v, %v", got, err)
	}
	files := []relay.ChangedFile{{Path: "/w/a.go", Change: relay.FileAdded, Size: 12}, {Path: "/w/b.go", Change: relay.FileDeleted}}
	first, err := e.db.AppendActivity(e.ctx, task.ID, []relay.ActivityEntry{
		{Seq: 99, Kind: relay.StepStart, Text: "Started"},
		{At: "2026-01-01T00:00:00.000Z", Kind: relay.StepCommand, Text: "go test", Detail: "ok", Status: relay.StepRunning, Ref: "c1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || first[0].Seq != 1 || first[1].Seq != 2 || first[0].At == "" ||
		first[1].At != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("first append = %+v", first)
	}
	if _, err := relay.ParseTime(first[0].At); err != nil {
		t.Fatalf("stamped At %q: %v", first[0].At, err)
	}
	second, err := e.db.AppendActivity(e.ctx, strUpper(task.ID), []relay.ActivityEntry{
		{Kind: relay.StepCommand, Text: "go test", Status: relay.StepOK, Ref: "c1"},
		{Kind: relay.StepFiles, Text: "2 files", Files: files},
	})
	if err != nil {
		t.Fatal(err)
	}
	if second[0].Seq != 3 || second[1].Seq != 4 {
		t.Fatalf("second append numbered %d, %d", second[0].Seq, second[1].Seq)
	}
	if o, err := e.db.AppendActivity(e.ctx, other.ID, []relay.ActivityEntry{{Kind: relay.StepStart, Text: "Go"}}); err != nil || o[0].Seq != 1 {
		t.Fatalf("another task's numbering = %+v, %v", o, err)
	}

	got, err := e.db.Activity(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(append([]relay.ActivityEntry{}, first...), second...); !reflect.DeepEqual(got, want) {
		t.Fatalf("Activity = %+v\nwant       %+v", got, want)
	}

	published := drain(changes, 50*time.Millisecond)
	if len(published) != 3 {
		t.Fatalf("published %d changes, want one per append: %+v", len(published), published)
	}
	for i, want := range [][]relay.ActivityEntry{first, second} {
		c := published[i]
		if c.Type != relay.ChangeActivity || c.TaskID != task.ID || !reflect.DeepEqual(c.Entries, want) {
			t.Fatalf("change %d = %+v, want entries %+v", i, c, want)
		}
	}

	_, err = e.db.AppendActivity(e.ctx, relay.NewID(), []relay.ActivityEntry{{Kind: relay.StepStart, Text: "x"}})
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.Activity(e.ctx, relay.NewID())
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.AppendActivity(e.ctx, "not-a-task", []relay.ActivityEntry{{Kind: relay.StepStart, Text: "x"}})
	wantCode(t, err, relay.EInvalidRequest)
	if got := drain(changes, 50*time.Millisecond); len(got) != 0 {
		t.Fatalf("refused appends published %+v", got)
	}
	if !e.db.Healthy() {
		t.Fatal("a refused append marked the store unhealthy")
	}
}

func strUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func TestAppendActivityConcurrent(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Busy", 0)
	const writers, appends = 2, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*appends)
	for w := range writers {
		wg.Go(func() {
			for i := range appends {
				// Batches of 1 and 2 entries, so numbering spans batches.
				batch := []relay.ActivityEntry{{Kind: relay.StepMessage, Text: fmt.Sprintf("w%d-%d-a", w, i)}}
				if i%2 == 1 {
					batch = append(batch, relay.ActivityEntry{Kind: relay.StepMessage, Text: fmt.Sprintf("w%d-%d-b", w, i)})
				}
				got, err := e.db.AppendActivity(e.ctx, task.ID, batch)
				if err != nil {
					errs <- err
					return
				}
				for j := 1; j < len(got); j++ {
					if got[j].Seq != got[j-1].Seq+1 {
						errs <- fmt.Errorf("one batch numbered %d then %d", got[j-1].Seq, got[j].Seq)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := e.db.Activity(e.ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	total := writers * (appends + appends/2)
	if len(got) != total {
		t.Fatalf("%d entries, want %d", len(got), total)
	}
	texts := map[string]bool{}
	for i, a := range got {
		if a.Seq != i+1 {
			t.Fatalf("entry %d has seq %d: not contiguous from 1", i, a.Seq)
		}
		if texts[a.Text] {
			t.Fatalf("entry %q stored twice", a.Text)
		}
		texts[a.Text] = true
	}
}

func TestTaskChangedFile(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Edit", 0)
	other := e.post("operator", "builder", "Other", 0)
	if _, err := e.db.AppendActivity(e.ctx, task.ID, []relay.ActivityEntry{
		{Kind: relay.StepFile, Text: "Edit /w/notes.md"},
		{Kind: relay.StepFiles, Text: "2 files", Files: []relay.ChangedFile{
			{Path: "/w/src/main.go", Change: relay.FileChanged, Size: 10},
			{Path: "/w/it's \"quoted\".txt", Change: relay.FileAdded},
		}},
		{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/gone.txt", Change: relay.FileDeleted}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.AppendActivity(e.ctx, other.ID, []relay.ActivityEntry{
		{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/other.go", Change: relay.FileAdded}}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		task, path string
		want       bool
	}{
		{task.ID, "/w/src/main.go", true},
		{task.ID, "/w/it's \"quoted\".txt", true},
		{task.ID, "/w/gone.txt", true},
		{strUpper(task.ID), "/w/src/main.go", true},
		{task.ID, "/w/src", false},
		{task.ID, "/w/src/main.go/", false},
		{task.ID, "/W/SRC/MAIN.GO", false},
		{task.ID, "/w/notes.md", false}, // in a step's text, not its files
		{task.ID, "", false},
		{task.ID, "/w/other.go", false}, // another task's file
		{other.ID, "/w/other.go", true},
		{relay.NewID(), "/w/src/main.go", false},
	} {
		got, err := e.db.TaskChangedFile(e.ctx, tc.task, tc.path)
		if err != nil || got != tc.want {
			t.Errorf("TaskChangedFile(%s, %q) = %v, %v; want %v", tc.task, tc.path, got, err, tc.want)
		}
	}
}

func TestRunSessions(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("builder")
	task := e.post("operator", "builder", "Resume me", 0)
	if s, ok, err := e.db.RunSession(e.ctx, task.ID); err != nil || ok || s != (relay.RunSession{}) {
		t.Fatalf("RunSession before any = %+v, %v, %v", s, ok, err)
	}
	first := relay.RunSession{TaskID: task.ID, Harness: "claude-code", SessionID: "s-1", Workdir: "/w"}
	if err := e.db.SaveRunSession(e.ctx, first); err != nil {
		t.Fatal(err)
	}
	if s, ok, err := e.db.RunSession(e.ctx, strUpper(task.ID)); err != nil || !ok || s != first {
		t.Fatalf("RunSession = %+v, %v, %v; want %+v", s, ok, err, first)
	}
	second := relay.RunSession{TaskID: strUpper(task.ID), Harness: "codex", SessionID: "s-2", Workdir: "/w2"}
	if err := e.db.SaveRunSession(e.ctx, second); err != nil {
		t.Fatal(err)
	}
	second.TaskID = task.ID
	if s, ok, err := e.db.RunSession(e.ctx, task.ID); err != nil || !ok || s != second {
		t.Fatalf("replaced RunSession = %+v, %v, %v; want %+v", s, ok, err, second)
	}
	if n := count(t, e.path, "run_sessions", "1"); n != 1 {
		t.Fatalf("%d session rows after an upsert", n)
	}
	err := e.db.SaveRunSession(e.ctx, relay.RunSession{TaskID: relay.NewID(), Harness: "codex", SessionID: "x"})
	wantCode(t, err, relay.EUnknownTask)
	if !e.db.Healthy() {
		t.Fatal("a refused session marked the store unhealthy")
	}
}

func TestPruneTakesActivityAndSessions(t *testing.T) {
	e := newEnv(t, store.Options{RetentionDays: 1})
	e.register("builder")
	done := e.post("operator", "builder", "Done long ago", 0)
	kept := e.post("operator", "builder", "Still open", 0)
	e.mustClaim("builder")
	e.report("builder", done.ID, relay.ReportCompleted, "Done.")
	for _, id := range []string{done.ID, kept.ID} {
		if _, err := e.db.AppendActivity(e.ctx, id, []relay.ActivityEntry{
			{Kind: relay.StepStart, Text: "Go"},
			{Kind: relay.StepFiles, Text: "1 file", Files: []relay.ChangedFile{{Path: "/w/x", Change: relay.FileAdded}}},
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.db.SaveRunSession(e.ctx, relay.RunSession{TaskID: id, Harness: "codex", SessionID: "s", Workdir: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(48 * time.Hour)
	res, err := e.db.Sweep(e.ctx)
	if err != nil || res.Pruned != 1 {
		t.Fatalf("Sweep = %+v, %v", res, err)
	}
	if n := count(t, e.path, "task_activity", "task_id = ?", done.ID); n != 0 {
		t.Fatalf("%d activity rows outlived their task", n)
	}
	if n := count(t, e.path, "run_sessions", "task_id = ?", done.ID); n != 0 {
		t.Fatal("the run session outlived its task")
	}
	if got, err := e.db.Activity(e.ctx, kept.ID); err != nil || len(got) != 2 {
		t.Fatalf("open task's activity = %+v, %v", got, err)
	}
	if _, ok, err := e.db.RunSession(e.ctx, kept.ID); err != nil || !ok {
		t.Fatalf("open task's session: %v, %v", ok, err)
	}
	if changed, err := e.db.TaskChangedFile(e.ctx, done.ID, "/w/x"); err != nil || changed {
		t.Fatalf("pruned task still reports a changed file: %v, %v", changed, err)
	}
}
