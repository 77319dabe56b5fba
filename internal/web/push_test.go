package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// pushEnv is a relay handler with the push stream on a loopback server.
// wrap, when given, stands between the stream and the store.
func pushEnv(t *testing.T, wrap ...func(relay.PushSource) relay.PushSource) (*httptest.Server, relay.Service) {
	t.Helper()
	db := openStore(t, nil)
	var push relay.PushSource = db
	for _, w := range wrap {
		push = w(push)
	}
	h, err := web.NewHandler(web.Config{
		Service:       db,
		AdminToken:    adminToken,
		MCP:           echoPrincipal(),
		Push:          push,
		PushHeartbeat: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, db
}

func TestPushRefusals(t *testing.T) {
	srv, db := pushEnv(t)
	tok := createAgent(t, db, "alice")
	_, runTok := issueRunToken(t, db, "alice")
	for _, tc := range []struct {
		name, method, query, token string
		status                     int
		code                       string
	}{
		{"no token", "GET", "", "", http.StatusUnauthorized, relay.EUnauthorized},
		{"unknown token", "GET", "", "cca_nope", http.StatusUnauthorized, relay.EUnauthorized},
		{"post", "POST", "", tok, http.StatusMethodNotAllowed, ""},
		{"bad cursor", "GET", "?after=-3", tok, http.StatusBadRequest, relay.EInvalidRequest},
		{"other agent", "GET", "?agent=bob", tok, http.StatusForbidden, relay.EIdentityMismatch},
		{"admin without agent", "GET", "", adminToken, http.StatusBadRequest, relay.ESlugRequired},
		{"admin, unknown agent", "GET", "?agent=nobody", adminToken, http.StatusNotFound, relay.EUnknownAgent},
		{"a worker run's token", "GET", "", runTok, http.StatusForbidden, relay.EForbidden},
		{"bad session", "GET", "?session=not%20an%20id", tok, http.StatusBadRequest, relay.EInvalidRequest},
		{"bad session name", "GET", "?session=s-1&sessionName=" + strings.Repeat("n", relay.MaxLiveSessionName+1), tok, http.StatusBadRequest, relay.EInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+relay.PushPath+tc.query, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body struct {
				Error string `json:"error"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tc.status || (tc.code != "" && body.Error != tc.code) {
				t.Fatalf("status %d code %q, want %d %q", resp.StatusCode, body.Error, tc.status, tc.code)
			}
		})
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, name, data string }

// openPush opens a stream and returns a channel of its events; a heartbeat
// comes as an event named "heartbeat".
func openPush(t *testing.T, ctx context.Context, url, token string, header map[string]string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("push stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 100)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.name != "" {
					out <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, ": heartbeat"):
				out <- sseEvent{name: "heartbeat"}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return out
}

// next returns the next event that is not a heartbeat, or fails after 10 s.
func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("push stream ended")
			}
			if e.name == "heartbeat" {
				continue
			}
			return e
		case <-timeout:
			t.Fatal("no push event within 10 s")
		}
	}
}

// pushAliceBob is pushEnv with the agents alice and bob, alice's token and
// a context that ends with the test.
func pushAliceBob(t *testing.T) (*httptest.Server, relay.Service, string, context.Context) {
	t.Helper()
	srv, db := pushEnv(t)
	aliceTok := createAgent(t, db, "alice")
	createAgent(t, db, "bob")
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	return srv, db, aliceTok, ctx
}

func TestPushStreamOrderAndResume(t *testing.T) {
	srv, db, aliceTok, ctx := pushAliceBob(t)
	post := func(title string) relay.Task {
		t.Helper()
		task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: title, Instructions: "Do " + title})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}

	// Without a cursor: only what arrives from now on ("before" is not even
	// written: alice's stream was never opened).
	post("before")
	live := openPush(t, ctx, srv.URL+relay.PushPath, aliceTok, nil)
	ready := next(t, live)
	if ready.name != relay.PushEventReady {
		t.Fatalf("first event %+v, want ready", ready)
	}
	var r struct {
		Agent  string `json:"agent"`
		Cursor int64  `json:"cursor"`
	}
	if err := json.Unmarshal([]byte(ready.data), &r); err != nil || r.Agent != "alice" || r.Cursor < 0 {
		t.Fatalf("ready %s: %v", ready.data, err)
	}
	t1 := post("one")
	t2 := post("two")
	// An update for alice: bob cancels the task he sent her.
	if _, err := db.CancelTask(ctx, "bob", t1.ID, "not needed"); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, want := range []struct{ name, kind, id string }{
		{relay.PushEventTask, relay.PushTask, t1.ID},
		{relay.PushEventTask, relay.PushTask, t2.ID},
		{relay.PushEventUpdate, relay.EventTaskCancelled, t1.ID},
	} {
		e := next(t, live)
		var pe relay.PushEvent
		if err := json.Unmarshal([]byte(e.data), &pe); err != nil {
			t.Fatal(err)
		}
		if e.name != want.name || pe.Kind != want.kind || pe.TaskID != want.id || e.id != strconv.FormatInt(pe.Sequence, 10) || pe.From != "bob" || pe.Agent != "alice" {
			t.Fatalf("event %+v %+v, want %+v", e, pe, want)
		}
		seqs = append(seqs, pe.Sequence)
	}
	if !(seqs[0] < seqs[1] && seqs[1] < seqs[2]) {
		t.Fatalf("sequences %v not increasing", seqs)
	}
	// Idle: heartbeats arrive.
	select {
	case e := <-live:
		if e.name != "heartbeat" {
			t.Fatalf("idle stream sent %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no heartbeat")
	}

	// Resume after the first event, by query and by Last-Event-ID: the rest, once.
	for _, how := range []struct {
		url    string
		header map[string]string
	}{
		{srv.URL + relay.PushPath + "?after=" + strconv.FormatInt(seqs[0], 10), nil},
		{srv.URL + relay.PushPath, map[string]string{"Last-Event-ID": strconv.FormatInt(seqs[0], 10)}},
	} {
		events := openPush(t, ctx, how.url, aliceTok, how.header)
		if e := next(t, events); e.name != relay.PushEventReady {
			t.Fatalf("first %+v", e)
		}
		for _, want := range seqs[1:] {
			e := next(t, events)
			if e.id != strconv.FormatInt(want, 10) {
				t.Fatalf("resumed event %+v, want id %d", e, want)
			}
		}
	}
}

// A stream's events are written from the moment it is first opened, so a
// cursor from before then is told it may have missed some, once; a cursor
// from then on is not.
func TestPushCursorOlderThanTheStream(t *testing.T) {
	srv, db := pushEnv(t)
	aliceTok := createAgent(t, db, "alice")
	carolTok := createAgent(t, db, "carol")
	createAgent(t, db, "bob")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	post := func(to, title string) {
		t.Helper()
		if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: to, Title: title, Instructions: "Do " + title}); err != nil {
			t.Fatal(err)
		}
	}
	// Carol follows her stream, so the sequence moves on.
	carol := openPush(t, ctx, srv.URL+relay.PushPath, carolTok, nil)
	if e := next(t, carol); e.name != relay.PushEventReady {
		t.Fatalf("first %+v", e)
	}
	post("carol", "for carol")
	if e := next(t, carol); e.name != relay.PushEventTask {
		t.Fatalf("carol got %+v", e)
	}
	post("alice", "unwritten")

	old := openPush(t, ctx, srv.URL+relay.PushPath+"?after=0", aliceTok, nil)
	if e := next(t, old); e.name != relay.PushEventReady {
		t.Fatalf("first %+v", e)
	}
	if e := next(t, old); e.name != relay.PushEventMissed || e.data != `{"cursor":0}` {
		t.Fatalf("after=0 from before the stream was opened: %+v, want missed", e)
	}
	post("alice", "written")
	e := next(t, old)
	var pe relay.PushEvent
	if err := json.Unmarshal([]byte(e.data), &pe); err != nil || e.name != relay.PushEventTask || pe.Title != "written" {
		t.Fatalf("then %+v (%v), want the task posted after", e, err)
	}
	// From the stream's start on, nothing is missed: the task only.
	since := strconv.FormatInt(pe.Sequence-1, 10)
	fresh := openPush(t, ctx, srv.URL+relay.PushPath+"?after="+since, aliceTok, nil)
	if e := next(t, fresh); e.name != relay.PushEventReady {
		t.Fatalf("first %+v", e)
	}
	if e := next(t, fresh); e.name != relay.PushEventTask || e.id != strconv.FormatInt(pe.Sequence, 10) {
		t.Fatalf("after=%s: %+v, want the task alone", since, e)
	}
}

// A cursor past the newest event (a monitor's saved cursor from another
// relay, or from before the data folder was reset) starts from the
// beginning of this journal, said in the ready event, so the agent's events
// are not skipped until the sequence passes it (missed only what this
// journal trimmed, as any cursor).
func TestPushCursorFromAnotherJournal(t *testing.T) {
	srv, db := pushEnv(t)
	aliceTok := createAgent(t, db, "alice")
	createAgent(t, db, "bob")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first := openPush(t, ctx, srv.URL+relay.PushPath, aliceTok, nil) // the stream's events are written from here
	if e := next(t, first); e.name != relay.PushEventReady {
		t.Fatalf("first %+v", e)
	}
	if _, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: "alice", Title: "one", Instructions: "x"}); err != nil {
		t.Fatal(err)
	}
	if e := next(t, first); e.name != relay.PushEventTask {
		t.Fatalf("then %+v", e)
	}
	ahead := openPush(t, ctx, srv.URL+relay.PushPath+"?after=999", aliceTok, nil)
	if e := next(t, ahead); e.name != relay.PushEventReady || !strings.Contains(e.data, `"cursor":0`) {
		t.Fatalf("after=999 with 1 event: %+v, want ready from 0", e)
	}
	var pe relay.PushEvent
	if e := next(t, ahead); e.name != relay.PushEventTask || json.Unmarshal([]byte(e.data), &pe) != nil || pe.Title != "one" {
		t.Fatalf("then %+v, want the task posted before", e)
	}
}

// staleCursor is the store behind the push stream, except that agent's
// cursor of stale reads as one among trimmed rows (MayHaveMissed), as the
// store reports it once the rows after it are gone.
type staleCursor struct {
	relay.PushSource
	agent string
	stale int64
}

func (s staleCursor) SessionPushEvents(ctx context.Context, live relay.LiveSession, after int64, limit int) (relay.PushBatch, error) {
	b, err := s.PushSource.SessionPushEvents(ctx, live, after, limit)
	if live.AgentSlug == s.agent && after == s.stale {
		b.MayHaveMissed = true
	}
	return b, err
}

// A cursor among trimmed rows is told it may have missed some once, not
// again at every heartbeat while the agent has no newer event to move it.
func TestPushMissedOncePerCursor(t *testing.T) {
	srv, db := pushEnv(t, func(p relay.PushSource) relay.PushSource { return staleCursor{PushSource: p, agent: "alice", stale: 2} })
	aliceTok := createAgent(t, db, "alice")
	carolTok := createAgent(t, db, "carol")
	createAgent(t, db, "bob")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	post := func(to, title string) relay.Task {
		t.Helper()
		task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "bob", RecipientSlug: to, Title: title, Instructions: "Go."})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	// Carol's stream moves the sequence past the stale cursor (2).
	carol := openPush(t, ctx, srv.URL+relay.PushPath, carolTok, nil)
	if e := next(t, carol); e.name != relay.PushEventReady {
		t.Fatalf("carol's first %+v, want ready", e)
	}
	for i := range 3 {
		post("carol", "for carol "+strconv.Itoa(i))
		if e := next(t, carol); e.name != relay.PushEventTask {
			t.Fatalf("carol got %+v", e)
		}
	}

	events := openPush(t, ctx, srv.URL+relay.PushPath+"?after=2", aliceTok, nil)
	if e := next(t, events); e.name != relay.PushEventReady {
		t.Fatalf("first %+v, want ready", e)
	}
	if e := next(t, events); e.name != relay.PushEventMissed || e.data != `{"cursor":2}` {
		t.Fatalf("second %+v, want missed for cursor 2", e)
	}
	for beats := 0; beats < 5; {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("push stream ended")
			}
			if e.name != "heartbeat" {
				t.Fatalf("idle stream after missed sent %+v; want heartbeats only", e)
			}
			beats++
		case <-time.After(10 * time.Second):
			t.Fatal("no heartbeat")
		}
	}
	task := post("alice", "after the gap")
	var pe relay.PushEvent
	if e := next(t, events); e.name != relay.PushEventTask || json.Unmarshal([]byte(e.data), &pe) != nil || pe.TaskID != task.ID {
		t.Fatalf("then %+v, want the task posted", e)
	}
}

// A stream that names a session records it as one of the agent's live
// sessions, with its name, before it says it is ready; and it gets the
// updates on the tasks that session posted, not those of another session.
func TestPushSessionStream(t *testing.T) {
	srv, db, aliceTok, ctx := pushAliceBob(t)
	events := openReady(t, ctx, srv.URL+relay.PushPath+"?session=s-1&sessionName=Main%20chat", aliceTok)
	live, err := liveSessions(ctx, db, "alice")
	if err != nil || len(live) != 1 || live[0].ID != "s-1" || live[0].Name != "Main chat" {
		t.Fatalf("alice's live sessions %+v %v, want s-1 named Main chat", live, err)
	}
	other, own := claimedFrom(t, ctx, db, "s-2"), claimedFrom(t, ctx, db, "s-1")
	var pe relay.PushEvent
	if e := next(t, events); json.Unmarshal([]byte(e.data), &pe) != nil || pe.TaskID != own.ID || pe.Kind != relay.EventTaskClaimed {
		t.Fatalf("s-1's stream got %+v, want the claim of its own task %s (not %s's)", e, own.ID, other.ID)
	}
	// Live for delivery is the stream's: s-1's stream was seen, s-2 only
	// posted (kept for its name, never live for delivery).
	live, err = liveSessions(ctx, db, "alice")
	if err != nil {
		t.Fatal(err)
	}
	stream := map[string]bool{}
	for _, s := range live {
		stream[s.ID] = s.StreamSeen != ""
	}
	if len(live) != 2 || !stream["s-1"] || stream["s-2"] {
		t.Fatalf("alice's live sessions %+v; want s-1 with its stream seen, s-2 without", live)
	}
}

// The admin token is never a live session, on the push stream as on /mcp
// (relay.NamesLiveSession): its ?agent=alice&session=… records no session
// for alice and gets alice's whole stream, the updates of every session's
// tasks.
func TestPushAdminNamesNoSession(t *testing.T) {
	srv, db, _, ctx := pushAliceBob(t)
	events := openReady(t, ctx, srv.URL+relay.PushPath+"?agent=alice&session=s-9&sessionName=Forged", adminToken)
	if live, err := liveSessions(ctx, db, "alice"); err != nil || len(live) != 0 {
		t.Fatalf("alice's live sessions after the admin's stream: %+v %v, want none", live, err)
	}
	task := claimedFrom(t, ctx, db, "s-1")
	var pe relay.PushEvent
	if e := next(t, events); json.Unmarshal([]byte(e.data), &pe) != nil || pe.TaskID != task.ID || pe.Kind != relay.EventTaskClaimed {
		t.Fatalf("the admin's stream got %+v, want the claim of s-1's task %s", e, task.ID)
	}
	if live, err := liveSessions(ctx, db, "alice"); err != nil || len(live) != 1 || live[0].ID != "s-1" {
		t.Fatalf("alice's live sessions: %+v %v, want only s-1 (its post)", live, err)
	}
}

// openReady is openPush without extra headers, past the ready event.
func openReady(t *testing.T, ctx context.Context, url, token string) <-chan sseEvent {
	t.Helper()
	events := openPush(t, ctx, url, token, nil)
	if e := next(t, events); e.name != relay.PushEventReady {
		t.Fatalf("first %+v, want ready", e)
	}
	return events
}

// claimedFrom posts a task from alice's live session to bob, which bob
// claims.
func claimedFrom(t *testing.T, ctx context.Context, db relay.Service, session string) relay.Task {
	t.Helper()
	task, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "from " + session, Instructions: "x",
		FromAgent: true, ReplySession: session})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"}); err != nil {
		t.Fatal(err)
	}
	return task
}

// liveSessions lists slug's live sessions as the store keeps them.
func liveSessions(ctx context.Context, db relay.Service, slug string) ([]relay.LiveSession, error) {
	return db.(interface {
		LiveSessions(context.Context, string) ([]relay.LiveSession, error)
	}).LiveSessions(ctx, slug)
}
