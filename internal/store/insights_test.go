package store_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// ms reads a stored timestamp as Unix milliseconds.
func ms(t testing.TB, s string) int64 {
	t.Helper()
	v, err := relay.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixMilli()
}

// nearestRank is the p-th percentile of vals by nearest rank, computed
// here apart from the store's SQL: the smallest value with at least p % of
// vals at or below it.
func nearestRank(vals []int64, p int) int64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	rank := (len(s)*p + 99) / 100 // ceil(n·p/100), 1-based
	return s[rank-1]
}

// durations summarizes vals as the store should.
func durations(vals []int64) relay.Durations {
	if len(vals) == 0 {
		return relay.Durations{}
	}
	return relay.Durations{Count: len(vals), MedianMs: nearestRank(vals, 50), P90Ms: nearestRank(vals, 90)}
}

// work posts a task from sender to recipient, lets wait pass, claims it
// (under a long lease), lets work pass and reports outcome ("" leaves it
// claimed). It returns the task as it ends, with its claim time.
func (e *env) work(sender, recipient, title string, wait, work time.Duration, outcome string) relay.Task {
	e.t.Helper()
	posted := e.post(sender, recipient, title, 0)
	e.clock.Advance(wait)
	claimed, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: recipient, LeaseSeconds: relay.MaxLeaseSeconds})
	if err != nil || claimed == nil || claimed.ID != posted.ID {
		e.t.Fatalf("claim of %q: %v, %v", title, claimed, err)
	}
	e.clock.Advance(work)
	if outcome == "" {
		return *claimed
	}
	return e.report(recipient, posted.ID, outcome, title+": "+outcome)
}

// TestInsightAggregates checks each chart aggregate on a small known data
// set against what the tasks' own timestamps say, and that each window is
// bounded: a task posted or finished before it counts nowhere.
func TestInsightAggregates(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ana", "ben", "cat")

	// Eight days before the rest: outside the 24-hour and 7-day windows.
	e.work("operator", "ben", "Old chore", time.Hour, time.Hour, relay.ReportCompleted)
	e.work("operator", "cat", "Old blocker", time.Minute, time.Minute, relay.ReportBlocked)
	e.clock.Advance(8 * 24 * time.Hour)

	// Two days ago: in the 7-day window, not in the last 24 hours.
	var inWeek []relay.Task
	inWeek = append(inWeek, e.work("operator", "ana", "Last week's plan", 30*time.Minute, 2*time.Hour, relay.ReportCompleted))
	e.clock.Advance(48 * time.Hour)

	// The last hours: ben does ten chores, claimed after 1..10 minutes and
	// each done in twice that; cat blocks once and completes once; ana
	// holds one claimed task and has one queued; the operator's root task
	// of a conversation stays queued for ana.
	var recent []relay.Task
	for i := 1; i <= 10; i++ {
		recent = append(recent, e.work("operator", "ben", fmt.Sprintf("Chore %d", i), time.Duration(i)*time.Minute, time.Duration(2*i)*time.Minute, relay.ReportCompleted))
	}
	recent = append(recent, e.work("operator", "cat", "Blocked chore", 3*time.Minute, 7*time.Minute, relay.ReportBlocked))
	recent = append(recent, e.work("operator", "cat", "Done chore", 4*time.Minute, 5*time.Minute, relay.ReportCompleted))
	recent = append(recent, e.work("operator", "ana", "Held chore", 6*time.Minute, 0, ""))
	recent = append(recent, e.post("operator", "ana", "Waiting chore", 0))
	now := e.clock.Now()

	t.Run("throughput per hour over 24 hours", func(t *testing.T) {
		w, err := relay.AlignedWindow(now, 0, time.Hour, 24)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.db.Throughput(e.ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]relay.ThroughputBucket, 24)
		start := w.Start().UnixMilli()
		for i := range want {
			want[i].Start = relay.FormatTime(w.Start().Add(time.Duration(i) * time.Hour))
		}
		for _, task := range recent {
			want[(ms(t, task.CreatedAt)-start)/3_600_000].Posted++
			if task.Status == relay.StatusCompleted {
				want[(ms(t, task.UpdatedAt)-start)/3_600_000].Completed++
			}
			if task.Status == relay.StatusBlocked {
				want[(ms(t, task.UpdatedAt)-start)/3_600_000].Blocked++
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("throughput:\n got %+v\nwant %+v", got, want)
		}
		var posted, completed, blocked int
		for _, b := range got {
			posted, completed, blocked = posted+b.Posted, completed+b.Completed, blocked+b.Blocked
		}
		if posted != 14 || completed != 11 || blocked != 1 {
			t.Errorf("24 hours hold %d posted, %d completed, %d blocked; want 14, 11, 1 (the older tasks left out)", posted, completed, blocked)
		}
	})

	t.Run("latencies per agent over 7 days", func(t *testing.T) {
		got, err := e.db.Latencies(e.ctx, now.Add(-7*24*time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		claims, finishes := map[string][]int64{}, map[string][]int64{}
		for _, task := range append(slices.Clone(inWeek), recent...) {
			if task.ClaimedAt == "" {
				continue
			}
			claims[task.RecipientSlug] = append(claims[task.RecipientSlug], ms(t, task.ClaimedAt)-ms(t, task.CreatedAt))
			if task.Status == relay.StatusCompleted {
				finishes[task.RecipientSlug] = append(finishes[task.RecipientSlug], ms(t, task.UpdatedAt)-ms(t, task.ClaimedAt))
			}
		}
		var want []relay.AgentLatency
		for _, slug := range []string{"ana", "ben", "cat"} {
			want = append(want, relay.AgentLatency{Slug: slug, Claim: durations(claims[slug]), Finish: durations(finishes[slug])})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("latencies:\n got %+v\nwant %+v", got, want)
		}
		// ben: claimed after 1..10 minutes, so the median is the 5th, p90 the 9th.
		ben := got[1]
		if ben.Claim.Count != 10 || ben.Claim.MedianMs/60_000 != 5 || ben.Claim.P90Ms/60_000 != 9 ||
			ben.Finish.MedianMs/60_000 != 10 || ben.Finish.P90Ms/60_000 != 18 {
			t.Errorf("ben's latencies %+v; want 10 claims, median 5 min, p90 9 min; finish median 10 min, p90 18 min", ben)
		}
		if got[0].Claim.Count != 2 || got[0].Finish.Count != 1 {
			t.Errorf("ana's latencies %+v; want 2 claims (last week's and the held one), 1 finish", got[0])
		}
	})

	t.Run("open work now", func(t *testing.T) {
		got, err := e.db.OpenWork(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []relay.OpenWork{{Slug: "ana", Queued: 1, Claimed: 1}, {Slug: "cat", Blocked: 2}}
		if !slices.Equal(got, want) {
			t.Errorf("open work %+v, want %+v", got, want)
		}
	})

	t.Run("outcomes per agent per day over 7 days", func(t *testing.T) {
		w, err := relay.AlignedWindow(now, 0, 24*time.Hour, 7)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.db.Outcomes(e.ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		totals := map[string][2]int{}
		for _, a := range got {
			if len(a.Buckets) != 7 {
				t.Fatalf("%s has %d buckets, want 7", a.Slug, len(a.Buckets))
			}
			sum := [2]int{}
			for _, b := range a.Buckets {
				sum[0], sum[1] = sum[0]+b.Completed, sum[1]+b.Blocked
			}
			if sum != [2]int{a.Completed, a.Blocked} {
				t.Errorf("%s: buckets add up to %v, totals say %d, %d", a.Slug, sum, a.Completed, a.Blocked)
			}
			totals[a.Slug] = sum
		}
		want := map[string][2]int{"ana": {1, 0}, "ben": {10, 0}, "cat": {1, 1}}
		if fmt.Sprint(totals) != fmt.Sprint(want) {
			t.Errorf("outcomes (completed, blocked) %v, want %v (the older ones left out)", totals, want)
		}
		last := got[1].Buckets[6]
		if got[1].Slug != "ben" || last.Completed != 10 || last.Start != relay.FormatTime(w.End.Add(-24*time.Hour)) {
			t.Errorf("ben's last day %+v, want the 10 chores in the bucket starting %s", last, relay.FormatTime(w.End.Add(-24*time.Hour)))
		}
	})
}

// TestInsightWindowsRefused: a window past the bounds is refused, not read.
func TestInsightWindowsRefused(t *testing.T) {
	e := newEnv(t, store.Options{})
	now := e.clock.Now()
	for _, w := range []relay.Window{
		{End: now, Bucket: time.Second, Buckets: 10},
		{End: now, Bucket: 90*time.Second + time.Millisecond, Buckets: 10},
		{End: now, Bucket: time.Hour, Buckets: 0},
		{End: now, Bucket: time.Hour, Buckets: relay.MaxInsightBuckets + 1},
		{End: now, Bucket: 24 * time.Hour, Buckets: 32},
		{Bucket: time.Hour, Buckets: 24},
	} {
		_, err := e.db.Throughput(e.ctx, w)
		wantCode(t, err, relay.EInvalidRequest)
		_, err = e.db.Outcomes(e.ctx, w)
		wantCode(t, err, relay.EInvalidRequest)
	}
	_, err := e.db.Latencies(e.ctx, now.Add(-40*24*time.Hour), now)
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.Latencies(e.ctx, now, now)
	wantCode(t, err, relay.EInvalidRequest)
}

// TestAlignedWindow: buckets start on the viewer's full hour and midnight,
// half-hour zones included, and the last bucket holds now.
func TestAlignedWindow(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 40, 0, 0, time.UTC)
	cases := []struct {
		offset  int
		bucket  time.Duration
		n       int
		wantEnd string
	}{
		{0, time.Hour, 24, "2026-03-14T13:00:00.000Z"},
		{330, time.Hour, 24, "2026-03-14T13:30:00.000Z"},      // UTC+5:30: 18:10 there, the hour ends at 19:00
		{-300, 24 * time.Hour, 7, "2026-03-15T05:00:00.000Z"}, // UTC−5: 07:40 there, the day ends at midnight
		{120, 24 * time.Hour, 7, "2026-03-14T22:00:00.000Z"},
	}
	for _, tc := range cases {
		w, err := relay.AlignedWindow(now, tc.offset, tc.bucket, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := relay.FormatTime(w.End); got != tc.wantEnd {
			t.Errorf("offset %d, bucket %s: window ends %s, want %s", tc.offset, tc.bucket, got, tc.wantEnd)
		}
		if !w.Start().Before(now) || !w.End.After(now) {
			t.Errorf("offset %d: window %s..%s does not hold now", tc.offset, w.Start(), w.End)
		}
	}
	_, err := relay.AlignedWindow(now, 15*60, time.Hour, 24)
	wantCode(t, err, relay.EInvalidRequest)
}

// TestConversationAggregate: a conversation operator → ana → ben → cat is
// read whole from any of its tasks, root first, with its parent links; a
// task of another conversation is not in it.
func TestConversationAggregate(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ana", "ben", "cat")
	handoff := func(from, to, title, parent string) relay.Task {
		t.Helper()
		task, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "Do it", ParentTaskID: parent})
		if err != nil {
			t.Fatalf("hand-off %q: %v", title, err)
		}
		return task
	}
	root := e.post("operator", "ana", "Build the parser", 0)
	e.mustClaim("ana")
	lexer := handoff("ana", "ben", "Write the lexer", root.ID)
	e.mustClaim("ben")
	tests := handoff("ben", "cat", "Test the lexer", lexer.ID)
	e.mustClaim("cat")
	e.report("cat", tests.ID, relay.ReportBlocked, "No fixtures.")
	other := e.post("operator", "ben", "Unrelated chore", 0)

	for _, from := range []string{root.ID, lexer.ID, tests.ID} {
		conv, err := e.db.Conversation(e.ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range conv.Tasks {
			got = append(got, fmt.Sprintf("%s>%s %s→%s %s hops=%d", c.ParentTaskID, c.ID, c.SenderSlug, c.RecipientSlug, c.Status, c.Hops))
		}
		want := []string{
			fmt.Sprintf(">%s operator→ana claimed hops=0", root.ID),
			fmt.Sprintf("%s>%s ana→ben claimed hops=1", root.ID, lexer.ID),
			fmt.Sprintf("%s>%s ben→cat blocked hops=2", lexer.ID, tests.ID),
		}
		if conv.ID != root.ID || !slices.Equal(got, want) || conv.Truncated {
			t.Errorf("conversation of %s: %s %v (truncated %v)\nwant %s %v", from, conv.ID, got, conv.Truncated, root.ID, want)
		}
	}
	conv, err := e.db.Conversation(e.ctx, other.ID)
	if err != nil || len(conv.Tasks) != 1 || conv.Tasks[0].ID != other.ID {
		t.Errorf("a task alone is its own conversation: %+v, %v", conv, err)
	}
	_, err = e.db.Conversation(e.ctx, "0190b4a4-0000-7000-8000-000000000000")
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.Conversation(e.ctx, "not a task")
	wantCode(t, err, relay.EInvalidRequest)
}

// TestConversationTruncated: a conversation past MaxConversationTasks
// returns its oldest tasks and says it was cut.
func TestConversationTruncated(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("ana", "ben")
	root := e.post("operator", "ana", "Fan out", 0)
	raw := rawDB(t, e.path)
	if _, err := raw.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, status, created_at, updated_at, parent_task_id, depth, conversation_id, hops)
		SELECT printf('0190b4a4-0000-7000-8000-%012d', i), 'ana', 'ben', 'Part ' || i, 'x', 'queued',
			printf('2026-03-15T00:%02d:%02d.000Z', i / 60 % 60, i % 60), '2026-03-15T00:00:00.000Z', ?, 1, ?, 1 FROM n`,
		relay.MaxConversationTasks+5, root.ID, root.ID); err != nil {
		t.Fatal(err)
	}
	conv, err := e.db.Conversation(e.ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !conv.Truncated || len(conv.Tasks) != relay.MaxConversationTasks || conv.Tasks[0].ID != root.ID {
		t.Fatalf("conversation of %d tasks: %d returned, truncated %v, first %s", relay.MaxConversationTasks+6, len(conv.Tasks), conv.Truncated, conv.Tasks[0].ID)
	}
	if !sort.SliceIsSorted(conv.Tasks, func(i, j int) bool { return conv.Tasks[i].CreatedAt < conv.Tasks[j].CreatedAt }) {
		t.Error("the conversation is not oldest first")
	}

	// Asked for from a task past the cut (the drawer of the newest part,
	// handed on once more), the answer still holds that task and its way
	// up to the root, so the drawer's tree shows the task it is open on.
	last := fmt.Sprintf("0190b4a4-0000-7000-8000-%012d", relay.MaxConversationTasks+5)
	deeper := "0190b4a4-0000-7000-8000-999999999999"
	if _, err := raw.Exec(`INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, status, created_at, updated_at, parent_task_id, depth, conversation_id, hops)
		VALUES (?, 'ben', 'ana', 'Deeper', 'x', 'queued', '2026-03-15T01:00:00.000Z', '2026-03-15T01:00:00.000Z', ?, 2, ?, 2)`, deeper, last, root.ID); err != nil {
		t.Fatal(err)
	}
	conv, err = e.db.Conversation(e.ctx, deeper)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, x := range conv.Tasks {
		ids[x.ID] = true
	}
	if !conv.Truncated || len(conv.Tasks) != relay.MaxConversationTasks || !ids[root.ID] || !ids[last] || !ids[deeper] {
		t.Fatalf("conversation asked for from %s past the cut: %d returned, truncated %v, root %v, its parent %v, itself %v",
			deeper, len(conv.Tasks), conv.Truncated, ids[root.ID], ids[last], ids[deeper])
	}
	if !sort.SliceIsSorted(conv.Tasks, func(i, j int) bool { return conv.Tasks[i].CreatedAt < conv.Tasks[j].CreatedAt }) {
		t.Error("the conversation with the way to the task is not oldest first")
	}
}

// TestOutcomesCountEndStates: a task blocked, requeued by its sender and
// then completed ended completed (the Agents page's share counts it so),
// while the hourly throughput counts both of its outcome reports.
func TestOutcomesCountEndStates(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("cat")
	task := e.work("operator", "cat", "Flaky chore", time.Minute, time.Minute, relay.ReportBlocked)
	if _, err := e.db.RequeueTask(e.ctx, "operator", task.ID, "Fixtures are in place."); err != nil {
		t.Fatal(err)
	}
	e.mustClaim("cat")
	e.report("cat", task.ID, relay.ReportCompleted, "Done after all.")
	now := e.clock.Now()

	days, err := relay.AlignedWindow(now, 0, 24*time.Hour, 7)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.db.Outcomes(e.ctx, days)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Completed != 1 || out[0].Blocked != 0 {
		t.Errorf("outcomes %+v, want cat with 1 completed and none blocked", out)
	}
	hours, err := relay.AlignedWindow(now, 0, time.Hour, 24)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := e.db.Throughput(e.ctx, hours)
	if err != nil {
		t.Fatal(err)
	}
	var completed, blocked int
	for _, b := range tp {
		completed, blocked = completed+b.Completed, blocked+b.Blocked
	}
	if completed != 1 || blocked != 1 {
		t.Errorf("throughput counts %d completed and %d blocked reports, want 1 and 1", completed, blocked)
	}
}

// TestOutcomesWindowBounds: a task that ended on a bucket's first
// millisecond counts in that bucket, one that ended on the window's end or
// before its start nowhere.
func TestOutcomesWindowBounds(t *testing.T) {
	e := newEnv(t, store.Options{})
	w, err := relay.AlignedWindow(e.clock.Now(), 0, 24*time.Hour, 7)
	if err != nil {
		t.Fatal(err)
	}
	day := int64(24 * time.Hour / time.Millisecond)
	insertTimedTasks(t, e, w.Start(), []timedTask{
		{"ana", -10, -5, -1, ""},                 // before the window
		{"ana", -10, -5, 0, ""},                  // its first millisecond: bucket 0
		{"ana", 0, 5, day, ""},                   // bucket 1's first
		{"ana", 0, 5, 7*day - 1, ""},             // the last millisecond: bucket 6
		{"ana", 0, 5, 7 * day, ""},               // the window's end: outside
		{"ben", 0, 5, none, relay.StatusBlocked}, // blocked at 5 ms: bucket 0
	})
	got, err := e.db.Outcomes(e.ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range got {
		for i, b := range a.Buckets {
			if b.Completed+b.Blocked > 0 {
				lines = append(lines, fmt.Sprintf("%s %d: %d completed, %d blocked", a.Slug, i, b.Completed, b.Blocked))
			}
		}
	}
	want := []string{"ana 0: 1 completed, 0 blocked", "ana 1: 1 completed, 0 blocked", "ana 6: 1 completed, 0 blocked", "ben 0: 0 completed, 1 blocked"}
	if !slices.Equal(lines, want) {
		t.Errorf("outcomes by bucket %q, want %q", lines, want)
	}
}
