package app_test

import (
	"context"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure the Insights service answers the charts from the relay's tasks, in
// the window and through the bridge alike: a conversation operator → ana →
// ben → cat (cat blocked) and a chore ben completes.
func TestInsights(t *testing.T) {
	r := startRelay(t)
	s, svc, ctx := r.Services, r.Service(), context.Background()
	for _, slug := range []string{"ana", "ben", "cat"} {
		_, err := s.Agents.Create(relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-output"}})
		noErr(t, err)
	}
	claim := func(slug string) relay.Task {
		t.Helper()
		task, err := svc.ClaimNext(ctx, relay.ClaimInput{RecipientSlug: slug, Via: relay.ViaChat})
		if err != nil || task == nil {
			t.Fatalf("claim for %s: %v, %v", slug, task, err)
		}
		return *task
	}
	handoff := func(from, to, title, parent string) relay.Task {
		t.Helper()
		task, err := svc.PostTask(ctx, relay.PostTaskInput{SenderSlug: from, RecipientSlug: to, Title: title, Instructions: "Do it", ParentTaskID: parent})
		noErr(t, err)
		return task
	}
	root := handoff("operator", "ana", "Build the parser", "")
	claim("ana")
	lexer := handoff("ana", "ben", "Write the lexer", root.ID)
	claim("ben")
	tests := handoff("ben", "cat", "Test the lexer", lexer.ID)
	claim("cat")
	_, err := svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "cat", TaskID: tests.ID, Kind: relay.ReportBlocked, Message: "No fixtures."})
	noErr(t, err)
	chore := handoff("operator", "ben", "Tidy the changelog", "")
	if c := claim("ben"); c.ID != chore.ID {
		t.Fatalf("ben claimed %s, want the chore", c.ID)
	}
	_, err = svc.ReportTask(ctx, relay.ReportInput{ReporterSlug: "ben", TaskID: chore.ID, Kind: relay.ReportCompleted, Message: "Done."})
	noErr(t, err)

	act, err := s.Insights.Activity(330) // a viewer in UTC+5:30
	noErr(t, err)
	var posted, completed, blocked int
	for _, b := range act.Throughput {
		posted, completed, blocked = posted+b.Posted, completed+b.Completed, blocked+b.Blocked
	}
	if len(act.Throughput) != 24 || posted != 4 || completed != 1 || blocked != 1 {
		t.Errorf("throughput: %d hours, %d posted, %d completed, %d blocked; want 24, 4, 1, 1", len(act.Throughput), posted, completed, blocked)
	}
	if start := act.Throughput[0].Start; start[14:16] != "30" {
		t.Errorf("the hours start at %s, not on the full hours of UTC+5:30", start)
	}
	lat := map[string]relay.AgentLatency{}
	for _, l := range act.Latencies {
		lat[l.Slug] = l
	}
	if lat["ben"].Claim.Count != 2 || lat["ben"].Finish.Count != 1 || lat["cat"].Claim.Count != 1 || lat["cat"].Finish.Count != 0 {
		t.Errorf("latencies %+v", act.Latencies)
	}
	open := map[string]relay.OpenWork{}
	for _, w := range act.OpenWork {
		open[w.Slug] = w
	}
	if open["ana"].Claimed != 1 || open["ben"].Claimed != 1 || open["cat"].Blocked != 1 || len(open) != 3 {
		t.Errorf("open work %+v", act.OpenWork)
	}
	_, err = s.Insights.Activity(24 * 60)
	wantCode(t, err, relay.EInvalidRequest)

	agents, err := s.Insights.Agents(0)
	noErr(t, err)
	got := map[string][2]int{}
	for _, a := range agents {
		got[a.Slug] = [2]int{a.Completed, a.Blocked}
		if len(a.Buckets) != 7 {
			t.Errorf("%s: %d days, want 7", a.Slug, len(a.Buckets))
		}
	}
	if got["ben"] != [2]int{1, 0} || got["cat"] != [2]int{0, 1} || len(got) != 2 {
		t.Errorf("outcomes %v, want ben 1 completed, cat 1 blocked", got)
	}

	// The browser's bridge serves the same conversation.
	token, err := r.Config().AdminToken(false)
	noErr(t, err)
	var conv relay.Conversation
	if err := client.New(r.Config().BaseURL(), token).Call(ctx, "Insights", "Conversation", &conv, tests.ID); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range conv.Tasks {
		ids = append(ids, c.ID)
	}
	if conv.ID != root.ID || len(ids) != 3 || ids[0] != root.ID || ids[1] != lexer.ID || ids[2] != tests.ID || conv.Tasks[2].ParentTaskID != lexer.ID {
		t.Errorf("conversation over the bridge %+v", conv)
	}
	var viaBridge relay.ActivityInsights
	if err := client.New(r.Config().BaseURL(), token).Call(ctx, "Insights", "Activity", &viaBridge, 0); err != nil {
		t.Fatal(err)
	}
	if len(viaBridge.Throughput) != 24 || len(viaBridge.OpenWork) != 3 {
		t.Errorf("activity over the bridge %+v", viaBridge)
	}
}
