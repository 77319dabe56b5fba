package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestHostileAppliesPublishedAsStored drives the apply paths with what a
// buggy or hostile peer may send and holds every published summary to
// ListTasks' and every handed task to db.Task.
func TestHostileAppliesPublishedAsStored(t *testing.T) {
	db := openGroup(t, "zed")
	ctx := context.Background()
	syncCarol(t, db)
	changes, stop := db.Subscribe(8192)
	defer stop()
	at := relay.FormatTime(time.Now())
	localTask, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "bob", Title: "Local", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: "bob"}); err != nil {
		t.Fatal(err)
	}
	foreign, err := db.ReportTask(ctx, relay.ReportInput{ReporterSlug: "bob", TaskID: localTask.ID, Kind: relay.ReportProgress, Message: "local"})
	if err != nil {
		t.Fatal(err)
	}
	foreignReport := foreign.Reports[len(foreign.Reports)-1].ID
	sent, err := db.PostTask(ctx, relay.PostTaskInput{SenderSlug: "alice", RecipientSlug: "carol", Title: "Across", Instructions: "x"})
	if err != nil {
		t.Fatal(err)
	}
	dupID := relay.NewID()
	hostileReports := func(tag string) []relay.Report {
		return []relay.Report{
			{ID: dupID, Kind: relay.ReportProgress, Message: tag + " one", CreatedAt: at},
			{ID: strings.ToUpper(" " + dupID + " "), Kind: relay.ReportProgress, Message: tag + " dup upper", CreatedAt: at},
			{ID: dupID, Kind: relay.ReportBlocked, Message: tag + " dup", CreatedAt: at},
			{ID: foreignReport, Kind: relay.ReportChanges, Message: tag + " foreign id", Result: "r", CreatedAt: at},
			{ID: "r1", Kind: relay.ReportProgress, Message: tag + " not a uuid", CreatedAt: ""},
			{ID: "r1", Kind: relay.ReportProgress, Message: tag + " not a uuid again", CreatedAt: at},
			{ID: relay.NewID(), Kind: "weird", Message: tag + " unknown kind", CreatedAt: at},
			{ID: "", Kind: relay.ReportCompleted, Message: tag + " no id \xff\xfe bad utf8", CreatedAt: "\xff"},
			{ID: relay.NewID(), Kind: relay.ReportProgress, Message: strings.Repeat("big  \n", 20000), Result: strings.Repeat("x", 1<<16), CreatedAt: at},
		}
	}
	peerTasks := map[string]string{} // title -> the id relay P knows it by
	newTask := func(title string, mod func(*relay.Task)) relay.Task {
		rt := relay.Task{ID: relay.NewID(), SenderSlug: "dave", RecipientSlug: "bob@ss00000000000000", Title: title, Instructions: "Do it.",
			RequiredCapabilities: []string{" b ", "a", "a", "<&>\u2028", "é"}, Priority: 3, Status: relay.StatusQueued, CreatedAt: at, UpdatedAt: at,
			Reports: hostileReports(title)}
		if mod != nil {
			mod(&rt)
		}
		peerTasks[title] = rt.ID
		return rt
	}
	// localID finds the task by its title.
	localID := func(title string) string {
		all, err := db.ListTasks(ctx, relay.TaskFilter{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range all {
			if s.Title == title {
				return s.ID
			}
		}
		t.Fatalf("no task %q", title)
		return ""
	}
	ev := func(typ, to string) *relay.MeshEvent { return eventFor(to, typ, at) }
	owner := func(status relay.TaskStatus, via, claimedAt string) relay.Task {
		return ownerState(sent, status, via, claimedAt, at, hostileReports(string(status)+via))
	}
	var msg int
	apply := func(seq int64, force bool, task relay.Task, e *relay.MeshEvent) relay.RemoteApply {
		msg++
		in := fromPeer(strings.Repeat("m", msg), seq, task, e)
		in.Force = force
		return in
	}
	sentBack := func(title string, seq int64, status relay.TaskStatus, e *relay.MeshEvent) relay.RemoteApply {
		rt := newTask(title+"?", nil)
		rt.ID, rt.Title, rt.Status = peerTasks[title], title, status
		return apply(seq, false, rt, e)
	}

	cases := []struct {
		name  string
		in    func() relay.RemoteApply
		title string // the task's title here
		claim bool   // a claim waits for bob
	}{
		{"new task, hostile fields", func() relay.RemoteApply {
			return apply(1, false, newTask("N1", func(rt *relay.Task) { rt.Depth, rt.Hops, rt.Priority = -5, -3, 0 }), nil)
		}, "N1", false},
		{"new task, huge depth, bad priority, untrimmed session", func() relay.RemoteApply {
			return apply(1, false, newTask("N2", func(rt *relay.Task) {
				rt.Depth, rt.Hops, rt.Priority, rt.TargetSession = 1<<62, 7, 9, "  s-1  "
			}), nil)
		}, "N2", false},
		{"new task, control session, conversation of an earlier one, parent", func() relay.RemoteApply {
			return apply(1, false, newTask("N3", func(rt *relay.Task) {
				rt.TargetSession, rt.ConversationID, rt.ParentTaskID = "a\x01b", strings.ToUpper(peerTasks["N1"]), peerTasks["N2"]
			}), nil)
		}, "N3", false},
		{"new task, conversation and parent of a local task, id taken", func() relay.RemoteApply {
			return apply(1, false, newTask("N4", func(rt *relay.Task) {
				rt.ID, rt.ConversationID, rt.ParentTaskID = localTask.ID, localTask.ID, localTask.ID
				peerTasks["N4"] = localTask.ID
			}), nil)
		}, "N4", false},
		{"new task, own id as conversation (other case), unknown conversation", func() relay.RemoteApply {
			return apply(0, false, newTask("N5", func(rt *relay.Task) { rt.ConversationID = strings.ToUpper(rt.ID) }), nil)
		}, "N5", false},
		{"new task, foreign conversation, no caps, no reports", func() relay.RemoteApply {
			return apply(3, true, newTask("N6", func(rt *relay.Task) {
				rt.ConversationID, rt.RequiredCapabilities, rt.Reports = relay.NewID(), nil, nil
			}), nil)
		}, "N6", false},
		{"handed, no reports", func() relay.RemoteApply {
			return apply(1, false, newTask("H1", func(rt *relay.Task) { rt.RecipientSlug, rt.Reports, rt.RequiredCapabilities = "zed", nil, nil }), nil)
		}, "H1", true},
		{"handed, hostile reports, claimed status sent", func() relay.RemoteApply {
			return apply(1, false, newTask("H2", func(rt *relay.Task) {
				rt.Status, rt.ClaimedAt, rt.ClaimedVia, rt.LeaseExpiresAt, rt.ReplySession = relay.StatusClaimed, at, "worker", at, "sess"
				rt.ConversationID, rt.RecipientSlug = peerTasks["N3"], "zed"
			}), nil)
		}, "H2", true},
		{"cancel with hostile reports", func() relay.RemoteApply {
			return sentBack("N1", 2, relay.StatusCancelled, ev(relay.EventTaskCancelled, "bob"))
		}, "N1", false},
		{"cancel again, no event", func() relay.RemoteApply { return sentBack("N1", 3, relay.StatusCancelled, nil) }, "N1", false},
		{"stale cancel", func() relay.RemoteApply {
			return sentBack("N2", 0, relay.StatusCancelled, ev(relay.EventTaskCancelled, "bob"))
		}, "N2", false},
		{"requeue a queued one", func() relay.RemoteApply {
			return sentBack("N3", 2, relay.StatusQueued, ev(relay.EventTaskRequeued, "bob"))
		}, "N3", false},
		{"cancel of the handed claimed task", func() relay.RemoteApply {
			return sentBack("H2", 2, relay.StatusCancelled, ev(relay.EventTaskCancelled, "zed"))
		}, "H2", false},
		{"mirror claimed via WORKER", func() relay.RemoteApply {
			return apply(1, false, owner(relay.StatusClaimed, "WORKER", at), ev(relay.EventTaskClaimed, "alice@relay-s"))
		}, "Across", false},
		{"mirror blocked via chat, no claimedAt", func() relay.RemoteApply {
			return apply(2, false, owner(relay.StatusBlocked, relay.ViaChat, ""), ev(relay.EventTaskBlocked, "someone"))
		}, "Across", false},
		{"mirror forced jump", func() relay.RemoteApply {
			return apply(9, true, owner(relay.StatusCompleted, "bogus\xff", "\xff"), nil)
		}, "Across", false},
		{"mirror stale", func() relay.RemoteApply {
			return apply(4, false, owner(relay.StatusQueued, relay.ViaWorker, at), nil)
		}, "Across", false},
		{"mirror unnumbered", func() relay.RemoteApply {
			return apply(0, false, owner(relay.StatusClaimed, relay.ViaWorker, at), nil)
		}, "Across", false},
	}
	for _, tc := range cases {
		var got <-chan claimOutcome
		if tc.claim {
			got = claimAsync(db, relay.ClaimInput{RecipientSlug: "zed", Wait: 20 * time.Second})
			waitParked(t, db, "zed", 1)
		}
		if ok, err := db.Mesh().ApplyRemote(ctx, tc.in()); !ok || err != nil {
			t.Fatalf("%s: applied %v, %v", tc.name, ok, err)
		}
		id := localID(tc.title)
		if tc.claim {
			handedAsStored(t, db, tc.name, answer(t, got), id)
		}
		publishedAsStored(t, db, changes, tc.name, id)
	}
}
