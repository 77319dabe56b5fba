package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// parkedFor counts the claims parked for recipient.
func (db *DB) parkedFor(recipient string) int {
	db.parking.mu.Lock()
	defer db.parking.mu.Unlock()
	return len(db.parking.claims[recipient])
}

// claimOutcome is what a waiting claim returned.
type claimOutcome struct {
	task *relay.Task
	err  error
}

// claimAsync starts a waiting claim and returns where its answer arrives.
func claimAsync(db *DB, in relay.ClaimInput) <-chan claimOutcome {
	out := make(chan claimOutcome, 1)
	go func() {
		task, err := db.ClaimNext(context.Background(), in)
		out <- claimOutcome{task, err}
	}()
	return out
}

// waitParked polls until n claims are parked for recipient.
func waitParked(t *testing.T, db *DB, recipient string, n int) {
	t.Helper()
	poll.Until(t, fmt.Sprintf("%d claims parked for %s", n, recipient), 30*time.Second,
		func() bool { return db.parkedFor(recipient) == n },
		func() string { return fmt.Sprintf("%d parked", db.parkedFor(recipient)) })
}

// answer receives a waiting claim's answer from ch, failing t after 30 s.
func answer[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("a waiting claim was not answered")
		var none T
		return none
	}
}

// TestPostHandsItsTaskToTheWaitingClaim: a task posted to an agent whose
// claim waits is claimed for it in the post's own commit, one commit for
// both, and the claim answers with it as if it had claimed it itself.
func TestPostHandsItsTaskToTheWaitingClaim(t *testing.T) {
	for _, via := range []string{relay.ViaChat, relay.ViaWorker} {
		t.Run(via, func(t *testing.T) {
			db := openGroup(t)
			ctx := context.Background()
			got := claimAsync(db, relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second, LeaseSeconds: 120, Via: via})
			waitParked(t, db, "bob", 1)
			before := db.WriteStats()
			posted, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Hand-off", Instructions: "Go."})
			if err != nil {
				t.Fatal(err)
			}
			o := answer(t, got)
			if o.err != nil || o.task == nil || o.task.ID != posted.ID || o.task.Status != relay.StatusClaimed || o.task.ClaimedVia != via || o.task.LeaseExpiresAt == "" {
				t.Fatalf("claim answered %+v, %v; want %s claimed via %s", o.task, o.err, posted.ID, via)
			}
			if after := db.WriteStats(); after.Batches != before.Batches+1 || after.Writes != before.Writes+1 {
				t.Errorf("post and hand-off took %d commits and %d writes, want 1 and 1", after.Batches-before.Batches, after.Writes-before.Writes)
			}
			if posted.Status != relay.StatusQueued {
				t.Errorf("the post answered %s; it describes the post (queued)", posted.Status)
			}
			stored, err := db.Task(ctx, posted.ID)
			if err != nil || stored.Status != relay.StatusClaimed || stored.ClaimedVia != via || stored.LeaseExpiresAt != o.task.LeaseExpiresAt {
				t.Fatalf("stored %+v, %v", stored, err)
			}
			u, err := db.ReadUpdates(ctx, "alice", 0)
			if err != nil || len(u.Updates) != 1 || u.Updates[0].Type != relay.EventTaskClaimed || u.Updates[0].TaskID != posted.ID {
				t.Fatalf("alice's updates %+v, %v; want one task-claimed", u.Updates, err)
			}
			if n := db.parkedFor("bob"); n != 0 {
				t.Errorf("%d claims still parked", n)
			}
		})
	}
}

// TestHandOffOnlyToAClaimThatWouldTakeTheTask: a waiting claim limited to
// some senders or sessions, or leaving live sessions' tasks to them (an
// unbound worker's), is handed only a task it would have claimed; any
// other stays queued and the claim keeps waiting.
func TestHandOffOnlyToAClaimThatWouldTakeTheTask(t *testing.T) {
	db := openGroup(t, "carol")
	ctx := context.Background()
	post := func(from, session string) relay.Task {
		t.Helper()
		task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: "bob", Title: "From " + from, Instructions: "Go.", TargetSession: session})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	for _, tc := range []struct {
		name         string
		in           relay.ClaimInput
		other, wants func() relay.Task
	}{
		{"senders", relay.ClaimInput{FromSenders: []string{"carol"}},
			func() relay.Task { return post("alice", "") }, func() relay.Task { return post("carol", "") }},
		{"sessions", relay.ClaimInput{ForSessions: []string{"s-1"}},
			func() relay.Task { return post("alice", "s-2") }, func() relay.Task { return post("alice", "s-1") }},
		{"live sessions left to them", relay.ClaimInput{LeaveLiveSessions: true},
			func() relay.Task {
				if err := db.SeeLiveSession(ctx, relay.LiveSession{AgentSlug: "bob", ID: "s-live"}); err != nil {
					t.Fatal(err)
				}
				return post("alice", "s-live")
			}, func() relay.Task { return post("alice", "s-gone") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.RecipientSlug, in.Wait = "bob", 20*time.Second
			got := claimAsync(db, in)
			waitParked(t, db, "bob", 1)
			other := tc.other()
			if stored, err := db.Task(ctx, other.ID); err != nil || stored.Status != relay.StatusQueued {
				t.Fatalf("a task the claim would not take: %+v, %v; want queued", stored, err)
			}
			select {
			case o := <-got:
				t.Fatalf("the claim answered %+v, %v for a task it does not take", o.task, o.err)
			default:
			}
			waitParked(t, db, "bob", 1) // woken by the post, it looked and waits again
			wanted := tc.wants()
			if o := answer(t, got); o.err != nil || o.task == nil || o.task.ID != wanted.ID {
				t.Fatalf("claim answered %+v, %v; want %s", o.task, o.err, wanted.ID)
			}
			// Clear bob's queue for the next case.
			if _, err := db.CancelTask(ctx, other.SenderSlug, other.ID, "done with it"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHandOffUndoneWithItsWrite: when the post's write fails after it took
// the waiting claim, nothing of the claim stays and the claim waits on;
// the next post reaches it.
func TestHandOffUndoneWithItsWrite(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	// A trigger on the writer's own connection makes claiming fail.
	if err := db.write(ctx, "inject", func(t *tx) error {
		_, err := t.exec(`CREATE TEMP TRIGGER fail_claim BEFORE UPDATE OF status ON tasks WHEN NEW.status = 'claimed'
			BEGIN SELECT RAISE(ABORT, 'claiming is broken'); END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := claimAsync(db, relay.ClaimInput{RecipientSlug: "bob", Wait: 20 * time.Second})
	waitParked(t, db, "bob", 1)
	if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Lost", Instructions: "Go."}); err == nil {
		t.Fatal("the post succeeded although its hand-off failed")
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks`); n != 0 {
		t.Fatalf("%d tasks stored by the failed post", n)
	}
	waitParked(t, db, "bob", 1)
	select {
	case o := <-got:
		t.Fatalf("the claim answered %+v, %v after the failed hand-off", o.task, o.err)
	default:
	}
	if err := db.write(ctx, "mend", func(t *tx) error {
		_, err := t.exec(`DROP TRIGGER temp.fail_claim`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	posted, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Found", Instructions: "Go."})
	if err != nil {
		t.Fatal(err)
	}
	if o := answer(t, got); o.err != nil || o.task == nil || o.task.ID != posted.ID {
		t.Fatalf("claim answered %+v, %v; want %s", o.task, o.err, posted.ID)
	}
}

// TestHandOffRacesClaimsGivingUp: claims whose wait ends just as tasks are
// posted to them. Every task a claim was handed is answered to that claim,
// and every other task is still queued: none is claimed for nobody.
func TestHandOffRacesClaimsGivingUp(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	const rounds = 150
	handed := 0
	var (
		mu      sync.Mutex
		claimed = map[string]int{} // task → claims it was answered to
		open    []string           // claimed and not completed yet
		wg      sync.WaitGroup
	)
	for i := range rounds {
		wg.Add(2)
		go func() {
			defer wg.Done()
			task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob", Wait: time.Duration(i%4) * time.Millisecond})
			if err != nil {
				t.Error(err)
				return
			}
			if task != nil {
				mu.Lock()
				claimed[task.ID]++
				open = append(open, task.ID)
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: fmt.Sprintf("Race %d", i), Instructions: "Go."}); err != nil {
				t.Error(err)
			}
		}()
		if i%10 == 9 {
			wg.Wait() // keep alice under her open-task cap
			for _, id := range open {
				if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: id, Kind: relay.ReportCompleted, Message: "Done."}); err != nil {
					t.Fatal(err)
				}
			}
			open = nil
			drainQueue(t, db)
		}
	}
	wg.Wait()
	for id, n := range claimed {
		if n > 0 {
			handed++
		}
		if n != 1 {
			t.Errorf("task %s answered to %d claims", id, n)
		}
	}
	if n := countRows(t, db, `SELECT COUNT(*) FROM tasks WHERE status = 'claimed'`); n != 0 {
		t.Errorf("%d tasks claimed for no claim that answered", n)
	}
	if n := db.parkedFor("bob"); n != 0 {
		t.Errorf("%d claims left parked", n)
	}
	if handed == 0 {
		t.Error("no claim got a task: the race was not run")
	}
}

// drainQueue claims and completes what is left in bob's queue.
func drainQueue(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	for {
		task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if task == nil {
			return
		}
		if _, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: relay.ReportCompleted, Message: "Done."}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitingClaimsEndOnce: a waiting claim ends on the first of the four
// things its select waits for, and only then: a post's hand-off (the three
// oldest claims get the three posts), its caller leaving, its timer, or the
// store closing (which wakes it). A claim that missed any of them would
// wait on for a minute and fail the test; one that ended on the wrong one
// would answer the wrong thing. A claim that finds a task queued answers
// it at once.
func TestWaitingClaimsEndOnce(t *testing.T) {
	db := openGroup(t, "carol") // closed in the test too (Close is idempotent)
	ctx := context.Background()
	post := func(to string) relay.Task {
		t.Helper()
		task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: to, Title: "For " + to, Instructions: "Go."})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}

	// A queued task is claimed at once.
	queued := post("carol")
	if task, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "carol", Wait: 20 * time.Second}); err != nil || task == nil || task.ID != queued.ID {
		t.Fatalf("claim with a task queued: %+v, %v; want %s", task, err, queued.ID)
	}

	const n = 200
	type answered struct {
		i    int
		task *relay.Task
		err  error
	}
	answers := make(chan answered, n)
	leaving, leave := context.WithCancel(ctx)
	defer leave()
	var running sync.WaitGroup
	for i := range n {
		cctx := ctx
		if i >= 3 && i < 100 {
			cctx = leaving
		}
		running.Add(1)
		go func() {
			defer running.Done()
			task, err := db.ClaimNext(cctx, relay.ClaimInput{RecipientSlug: "bob", Wait: time.Minute})
			answers <- answered{i, task, err}
		}()
		if i < 3 {
			waitParked(t, db, "bob", i+1) // the three oldest, in order
		}
	}
	waitParked(t, db, "bob", n)
	next := func() answered {
		t.Helper()
		return answer(t, answers)
	}

	// Three posts are handed to the three oldest claims.
	posted := map[string]bool{}
	for range 3 {
		posted[post("bob").ID] = true
	}
	for range 3 {
		a := next()
		if a.err != nil || a.task == nil || !posted[a.task.ID] || a.i >= 3 {
			t.Fatalf("claim %d answered %+v, %v; want one of the posted tasks for one of the three oldest claims", a.i, a.task, a.err)
		}
		delete(posted, a.task.ID)
	}
	// The callers of 97 of them leave: they answer no task.
	leave()
	for range 97 {
		if a := next(); a.err != nil || a.task != nil || a.i < 3 || a.i >= 100 {
			t.Fatalf("claim %d answered %+v, %v after its caller left; want no task", a.i, a.task, a.err)
		}
	}
	// A short wait runs out.
	if o := answer(t, claimAsync(db, relay.ClaimInput{RecipientSlug: "carol", Wait: 50 * time.Millisecond})); o.task != nil || o.err != nil {
		t.Fatalf("a claim whose wait ran out answered %+v, %v", o.task, o.err)
	}
	// Closing the store answers the other 100.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if a := next(); a.err != nil || a.task != nil || a.i < 100 {
			t.Fatalf("claim %d answered %+v, %v at close; want no task", a.i, a.task, a.err)
		}
	}
	running.Wait()
	select {
	case a := <-answers:
		t.Fatalf("claim %d answered twice", a.i)
	default:
	}
}

// TestWaitingClaimsUnderMixedLoad: claims that wait for random times, a
// third of them given up by their callers and a quarter only for one
// sender's tasks, race with posts from two senders. Every task claimed
// reaches exactly one claim and no other task reaches any, and nothing is
// left parked or running afterwards.
func TestWaitingClaimsUnderMixedLoad(t *testing.T) {
	db := openGroup(t, "dave")
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	base := runtime.NumGoroutine()

	const claims, posters, posts = 300, 4, 40
	var (
		mu        sync.Mutex
		delivered = map[string]int{}
		all       sync.WaitGroup
	)
	for i := range claims {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		start, wait := time.Duration(rng.IntN(300))*time.Millisecond, time.Duration(rng.IntN(200))*time.Millisecond
		leave := time.Duration(-1)
		if rng.IntN(3) == 0 {
			leave = time.Duration(rng.IntN(100)) * time.Millisecond
		}
		only := rng.IntN(4) == 0
		all.Add(1)
		go func() {
			defer all.Done()
			time.Sleep(start)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if leave >= 0 {
				time.AfterFunc(leave, cancel)
			}
			in := relay.ClaimInput{RecipientSlug: "bob", Wait: wait}
			if only {
				in.FromSenders = []string{"dave"}
			}
			task, err := db.ClaimNext(cctx, in)
			if err != nil {
				t.Errorf("claim %d: %v", i, err)
			}
			if task != nil {
				mu.Lock()
				delivered[task.ID]++
				mu.Unlock()
			}
		}()
	}
	var (
		posted []string
		sent   sync.WaitGroup
	)
	for p := range posters {
		sent.Add(1)
		go func() {
			defer sent.Done()
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(claims+p)))
			for range posts {
				time.Sleep(time.Duration(rng.IntN(10)) * time.Millisecond)
				from := []string{"alice", "dave"}[rng.IntN(2)]
				task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: "bob", Title: "From " + from, Instructions: "Go."})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				posted = append(posted, task.ID)
				mu.Unlock()
			}
		}()
	}
	sent.Wait()
	all.Wait()

	claimed := 0
	for _, id := range posted {
		task, err := db.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch n := delivered[id]; {
		case task.Status == relay.StatusClaimed && n != 1:
			t.Errorf("task %s is claimed and reached %d claims, want 1", id, n)
		case task.Status != relay.StatusClaimed && n != 0:
			t.Errorf("task %s is %s and reached %d claims, want none", id, task.Status, n)
		}
		if task.Status == relay.StatusClaimed {
			claimed++
		}
	}
	if n := db.parkedFor("bob"); n != 0 {
		t.Errorf("%d claims still parked", n)
	}
	poll.Until(t, "the claims' goroutines to end", 10*time.Second, func() bool { return runtime.NumGoroutine() <= base+2 },
		func() string { return fmt.Sprintf("%d goroutines, %d before", runtime.NumGoroutine(), base) })
	t.Logf("%d tasks posted, %d claimed", len(posted), claimed)
}
