package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

func TestTaskAccessAndValidation(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob", "carol")
	task := e.post("alice", "bob", title, 0)
	for _, who := range []string{"alice", "bob", " BOB "} {
		got, err := e.db.GetTask(e.ctx, who, task.ID)
		if err != nil || got.ID != task.ID || got.Instructions != "Do "+title {
			t.Fatalf("GetTask(%q) = %+v, %v", who, got, err)
		}
	}
	_, err := e.db.GetTask(e.ctx, "carol", task.ID)
	wantCode(t, err, relay.ETaskAccessDenied)
	// Unknown task first, then access.
	_, err = e.db.GetTask(e.ctx, "carol", relay.NewID())
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.GetTask(e.ctx, "alice", "not-a-uuid")
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.Task(e.ctx, relay.NewID())
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: relay.NewID(), Kind: relay.ReportProgress, Message: "x"})
	wantCode(t, err, relay.EUnknownTask)
	_, err = e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: task.ID, Kind: "done", Message: "x"})
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.RenewLease(e.ctx, "bob", task.ID, 30)
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 86401})
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", Via: "email"})
	wantCode(t, err, relay.EInvalidRequest)
	_, err = e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "nobody"})
	wantCode(t, err, relay.EUnknownAgent)
	_, err = e.db.CancelTask(e.ctx, "alice", task.ID, "   ")
	wantCode(t, err, relay.EInvalidRequest)

	posts := []struct {
		name string
		in   relay.PostTaskInput
		code string
	}{
		{"unknown sender", relay.PostTaskInput{SenderSlug: "ghost", RecipientSlug: "bob", Title: "t", Instructions: "i"}, relay.EUnknownAgent},
		{"unknown recipient", relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "ghost", Title: "t", Instructions: "i"}, relay.EUnknownAgent},
		{"empty title", relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: " ", Instructions: "i"}, relay.EInvalidRequest},
		{"bad priority", relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t", Instructions: "i", Priority: 4}, relay.EInvalidRequest},
		{"unknown parent", relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t", Instructions: "i", ParentTaskID: relay.NewID()}, relay.EUnknownTask},
		{"foreign parent", relay.PostTaskInput{SenderSlug: "carol", RecipientSlug: "bob", Title: "t", Instructions: "i", ParentTaskID: task.ID}, relay.ETaskAccessDenied},
		{"missing capability", relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "t", Instructions: "i", RequiredCapabilities: []string{"web-search", "text-input", "image-output"}}, relay.ERecipientLacksCapability},
	}
	for _, tc := range posts {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.db.PostTask(e.ctx, tc.in)
			wantCode(t, err, tc.code)
			if tc.code == relay.ERecipientLacksCapability {
				re := err.(*relay.Error)
				missing, _ := re.Details["missingCapabilities"].([]string)
				if !equalStrings(missing, []string{"image-output", "web-search"}) {
					t.Errorf("missingCapabilities = %v", re.Details["missingCapabilities"])
				}
				if re.Message != "Cannot assign to bob: it does not advertise image-output, web-search." {
					t.Errorf("message = %q", re.Message)
				}
			}
		})
	}
	ok, err := e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: "Alice", RecipientSlug: "bob", Title: "  Caps  ", Instructions: "i",
		RequiredCapabilities: []string{"text-output", "text-input", "text-output"}, Priority: 3})
	if err != nil {
		t.Fatal(err)
	}
	if ok.SenderSlug != "alice" || ok.Title != "Caps" || !equalStrings(ok.RequiredCapabilities, []string{"text-input", "text-output"}) || ok.Priority != 3 {
		t.Fatalf("normalized task = %+v", ok)
	}
}

func TestClaimOrder(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "carol", "bob")
	low := e.post("alice", "bob", "low", relay.PriorityLow)
	urgent1 := e.post("alice", "bob", "urgent first", relay.PriorityUrgent)
	normal := e.post("alice", "bob", "normal", relay.PriorityNormal)
	urgent2 := e.post("carol", "bob", "urgent second", relay.PriorityUrgent)
	e.post("alice", "carol", "someone else's", relay.PriorityUrgent)
	var got []string
	for {
		task := e.claim("bob")
		if task == nil {
			break
		}
		got = append(got, task.ID)
	}
	want := []string{urgent1.ID, urgent2.ID, normal.ID, low.ID}
	if !equalStrings(got, want) {
		t.Fatalf("claim order = %v, want %v", got, want)
	}
}

func TestClaimSenderFilter(t *testing.T) {
	cases := []struct {
		name    string
		senders []string
		want    []string // titles, in claim order
	}{
		{"nil claims anyone's", nil, []string{"from alice", "from carol"}},
		{"one sender", []string{"carol"}, []string{"from carol"}},
		{"normalized", []string{" CAROL ", "alice"}, []string{"from alice", "from carol"}},
		{"empty claims nothing", []string{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, store.Options{})
			e.agents("alice", "carol", "bob")
			e.post("alice", "bob", "from alice", 0)
			e.post("carol", "bob", "from carol", 0)
			var got []string
			for {
				task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", FromSenders: tc.senders, Via: relay.ViaWorker})
				if err != nil {
					t.Fatal(err)
				}
				if task == nil {
					break
				}
				if task.ClaimedVia != relay.ViaWorker {
					t.Errorf("claimedVia = %q", task.ClaimedVia)
				}
				got = append(got, task.Title)
			}
			if !equalStrings(got, tc.want) {
				t.Fatalf("claimed %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWorkerClaimSummaryAndReclaimVia(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	got, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: "bob", Via: relay.ViaWorker})
	if err != nil || got == nil || got.ClaimedVia != relay.ViaWorker {
		t.Fatalf("worker claim = %+v, %v", got, err)
	}
	u := e.updates("alice")
	if len(u.Updates) != 1 || u.Updates[0].Summary != "bob claimed “Fix the bug” (worker)." {
		t.Fatalf("worker claim event = %+v", u.Updates)
	}
	released, err := e.db.ReleaseTask(e.ctx, "bob", task.ID, "restart")
	if err != nil || released.ClaimedVia != "" {
		t.Fatalf("released = %+v, %v", released, err)
	}
	if again := e.mustClaim("bob"); again.ClaimedVia != relay.ViaChat {
		t.Fatalf("chat reclaim via = %q", again.ClaimedVia)
	}
}

func TestHandOffsDepthAndChainLimit(t *testing.T) {
	e := newEnv(t, store.Options{})
	for _, s := range []string{"alice", "bob", "carol", "dave"} {
		e.register(s)
	}
	root := e.post("alice", "bob", "root", 0)
	post := func(from, to, title, parent string, enforce bool) (relay.Task, error) {
		return e.db.PostTask(e.ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "i", ParentTaskID: parent, FromAgent: enforce})
	}
	child, err := post("bob", "carol", "child", root.ID, true)
	if err != nil || child.Depth != 1 || child.ParentTaskID != root.ID {
		t.Fatalf("child = %+v, %v", child, err)
	}
	sibling, err := post("alice", "dave", "sibling", root.ID, false)
	if err != nil || sibling.Depth != 1 {
		t.Fatalf("sibling = %+v, %v", sibling, err)
	}
	if _, err := e.db.UpdateSettings(e.ctx, relay.Settings{MaxChainDepth: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = post("carol", "dave", "grandchild", child.ID, true)
	wantCode(t, err, relay.EChainLimit)
	re := err.(*relay.Error)
	if re.Details["depth"] != 2 || re.Details["limit"] != 1 || !strings.Contains(re.Message, "BLOCKED:") {
		t.Fatalf("chain_limit = %+v", re)
	}
	// A link made by hand is never refused.
	grand, err := post("carol", "dave", "grandchild", child.ID, false)
	if err != nil || grand.Depth != 2 {
		t.Fatalf("manual grandchild = %+v, %v", grand, err)
	}
	// The default limit (3) applies when the setting was never written.
	e2 := newEnv(t, store.Options{})
	e2.register("a1")
	e2.register("a2")
	parent := e2.post("a1", "a2", "d0", 0).ID
	for depth := 1; depth <= 4; depth++ {
		task, err := e2.db.PostTask(e2.ctx, relay.PostTaskInput{SenderSlug: "a2", RecipientSlug: "a1", Title: "d", Instructions: "i", ParentTaskID: parent, FromAgent: true})
		if depth <= relay.DefaultChainLimit {
			if err != nil {
				t.Fatalf("depth %d refused: %v", depth, err)
			}
			if task.Depth != depth {
				t.Fatalf("depth = %d, want %d", task.Depth, depth)
			}
			parent = task.ID
			continue
		}
		wantCode(t, err, relay.EChainLimit)
	}

	rel, err := e.db.RelatedTasks(e.ctx, root.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Parent != nil || len(rel.Children) != 2 || rel.Children[0].ID != child.ID || rel.Children[1].ID != sibling.ID {
		t.Fatalf("related(root) = %+v", rel)
	}
	rel, err = e.db.RelatedTasks(e.ctx, child.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Parent == nil || rel.Parent.ID != root.ID || len(rel.Children) != 1 || rel.Children[0].ID != grand.ID {
		t.Fatalf("related(child) = %+v", rel)
	}
	_, err = e.db.RelatedTasks(e.ctx, relay.NewID())
	wantCode(t, err, relay.EUnknownTask)
}

func TestListTasksAndSummaries(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.agents("alice", "bob", "carol")
	a := e.post("alice", "bob", "Deploy 100% of the API", 0)
	b := e.post("carol", "bob", "Fix my_func", 0)
	c := e.post("alice", "carol", `Path C:\temp cleanup`, 0)
	d := e.post("alice", "bob", "deploy the docs", 0)
	e.mustClaim("bob") // a (oldest, same priority)
	long := "  line one\n\n\tline two   " + strings.Repeat("word ", 80)
	e.report("bob", a.ID, relay.ReportProgress, "first")
	e.report("bob", a.ID, relay.ReportProgress, long)

	checkList(t, e.ctx, e.db.ListTasks, func(s relay.TaskSummary) string { return s.ID }, []listCase[relay.TaskFilter, string]{
		{"all, newest update first", relay.TaskFilter{}, []string{a.ID, d.ID, c.ID, b.ID}},
		{"status", relay.TaskFilter{Statuses: []relay.TaskStatus{relay.StatusQueued}}, []string{d.ID, c.ID, b.ID}},
		{"two statuses", relay.TaskFilter{Statuses: []relay.TaskStatus{relay.StatusClaimed, relay.StatusCompleted}}, []string{a.ID}},
		{"agent as sender or recipient", relay.TaskFilter{Agent: "carol"}, []string{c.ID, b.ID}},
		{"title, case-insensitive", relay.TaskFilter{Query: "DEPLOY"}, []string{a.ID, d.ID}},
		{"percent is literal", relay.TaskFilter{Query: "100%"}, []string{a.ID}},
		{"percent does not match anything", relay.TaskFilter{Query: "y%t"}, nil},
		{"underscore is literal", relay.TaskFilter{Query: "my_f"}, []string{b.ID}},
		{"underscore does not match one char", relay.TaskFilter{Query: "Fix_my"}, nil},
		{"backslash is literal", relay.TaskFilter{Query: `C:\t`}, []string{c.ID}},
		{"limit", relay.TaskFilter{Limit: 2}, []string{a.ID, d.ID}},
		{"combined", relay.TaskFilter{Agent: "bob", Statuses: []relay.TaskStatus{relay.StatusQueued}, Query: "e"}, []string{d.ID}},
		{"a whole id", relay.TaskFilter{Query: c.ID}, []string{c.ID}},
		{"an id's start, in capitals", relay.TaskFilter{Query: strings.ToUpper(b.ID[:23])}, []string{b.ID}},
		{"an id's end, as the dashboard's search finds it", relay.TaskFilter{Query: c.ID[len(c.ID)-12:]}, []string{c.ID}},
		{"a wildcard is no part of an id", relay.TaskFilter{Query: "%%%%%%%%"}, nil},
		{"a short query matches titles only", relay.TaskFilter{Query: a.ID[:2]}, nil},
	})
	for _, bad := range []relay.TaskFilter{
		{Statuses: []relay.TaskStatus{"done"}},
		// More than there are: each is a bound variable, and SQLite
		// refused 40,000 of them as an internal error.
		{Statuses: slices.Repeat([]relay.TaskStatus{relay.StatusQueued}, 40000)},
		// Longer than any title: refused, not an internal error from
		// SQLite's "LIKE or GLOB pattern too complex" (50,000 characters).
		{Query: strings.Repeat("x", relay.MaxShortText+1)},
		{Query: strings.Repeat("x", 50000)},
	} {
		_, err := e.db.ListTasks(e.ctx, bad)
		wantCode(t, err, relay.EInvalidRequest)
	}
	if got, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Query: strings.Repeat("x", relay.MaxShortText)}); err != nil || len(got) != 0 {
		t.Fatalf("a query as long as a title may be: %v %v", got, err)
	}

	sums, err := e.db.ListTasks(e.ctx, relay.TaskFilter{Query: "API"})
	if err != nil || len(sums) != 1 {
		t.Fatalf("summaries = %+v, %v", sums, err)
	}
	s := sums[0]
	if s.ReportCount != 2 || s.LatestReport == nil || s.LatestReport.Kind != relay.ReportProgress {
		t.Fatalf("summary = %+v", s)
	}
	msg := s.LatestReport.Message
	if n := len([]rune(msg)); n != 280 || !strings.HasSuffix(msg, "…") || !strings.HasPrefix(msg, "line one line two word word") || strings.Contains(msg, "  ") {
		t.Fatalf("excerpt (%d chars) = %q", len([]rune(msg)), msg)
	}
	if s.Status != relay.StatusClaimed || s.ClaimedVia != relay.ViaChat || s.LeaseExpiresAt == "" {
		t.Fatalf("summary = %+v", s)
	}
	short, _ := e.db.ListTasks(e.ctx, relay.TaskFilter{Query: "docs"})
	if short[0].ReportCount != 0 || short[0].LatestReport != nil {
		t.Fatalf("summary without reports = %+v", short[0])
	}
}

func TestListTasksLimitClamp(t *testing.T) {
	e := newEnv(t, store.Options{})
	e.register("alice")
	for i := 0; i < 105; i++ {
		e.post("alice", "alice", fmt.Sprintf("t%d", i), 0)
	}
	for _, tc := range []struct{ limit, want int }{{0, 100}, {-5, 100}, {1, 1}, {600, 105}} {
		got, err := e.db.ListTasks(context.Background(), relay.TaskFilter{Limit: tc.limit})
		if err != nil || len(got) != tc.want {
			t.Fatalf("limit %d: %d tasks, %v; want %d", tc.limit, len(got), err, tc.want)
		}
	}
}

func TestTaskChangeCarriesExcerpt(t *testing.T) {
	e := newEnv(t, store.Options{})
	task := e.sentTask()
	e.mustClaim("bob")
	changes, stop := e.db.Subscribe(16)
	defer stop()
	full := e.report("bob", task.ID, relay.ReportProgress, strings.Repeat("x", 300))
	var got *relay.TaskSummary
	for _, c := range drain(changes, 50*time.Millisecond) {
		if c.Type == relay.ChangeTask {
			got = c.Task
		}
	}
	if got == nil || got.ReportCount != 1 || got.LatestReport == nil || len([]rune(got.LatestReport.Message)) != 280 {
		t.Fatalf("task change = %+v", got)
	}
	if len(full.Reports[0].Message) != 300 {
		t.Fatal("the full task lost its report text")
	}
}
