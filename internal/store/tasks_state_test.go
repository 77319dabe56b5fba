package store_test

import (
	"fmt"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

const title = "Fix the bug"

// reach posts a task from alice to bob and moves it to state.
func reach(e *env, state relay.TaskStatus) relay.Task {
	e.t.Helper()
	task := e.post("alice", "bob", title, 0)
	switch state {
	case relay.StatusClaimed:
		e.mustClaim("bob")
	case relay.StatusBlocked:
		e.mustClaim("bob")
		e.report("bob", task.ID, relay.ReportBlocked, "Need the key")
	case relay.StatusCompleted:
		e.mustClaim("bob")
		e.report("bob", task.ID, relay.ReportCompleted, "Fixed")
	case relay.StatusCancelled:
		if _, err := e.db.CancelTask(e.ctx, "alice", task.ID, "Not needed"); err != nil {
			e.t.Fatal(err)
		}
	}
	e.updates("alice")
	e.updates("bob")
	got := e.task(task.ID)
	if got.Status != state {
		e.t.Fatalf("reached %s, want %s", got.Status, state)
	}
	return got
}

type action struct {
	name string
	do   func(e *env, id, actor string) error
}

var actions = map[string]action{}

func init() {
	for _, a := range []action{
		{"claim", func(e *env, id, actor string) error {
			task, err := e.db.ClaimNext(e.ctx, relay.ClaimInput{RecipientSlug: actor})
			if err == nil && task == nil {
				return errNoTask
			}
			return err
		}},
		{"progress", func(e *env, id, actor string) error {
			_, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: actor, TaskID: id, Kind: relay.ReportProgress, Message: "Halfway"})
			return err
		}},
		{"complete", func(e *env, id, actor string) error {
			_, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: actor, TaskID: id, Kind: relay.ReportCompleted, Message: "Fixed", Result: "patch.diff"})
			return err
		}},
		{"block", func(e *env, id, actor string) error {
			_, err := e.db.ReportTask(e.ctx, relay.ReportInput{ReporterSlug: actor, TaskID: id, Kind: relay.ReportBlocked, Message: "Need the key"})
			return err
		}},
		{"release", func(e *env, id, actor string) error {
			_, err := e.db.ReleaseTask(e.ctx, actor, id, "Out of time")
			return err
		}},
		{"renew", func(e *env, id, actor string) error {
			_, err := e.db.RenewLease(e.ctx, actor, id, 120)
			return err
		}},
		{"cancel", func(e *env, id, actor string) error {
			_, err := e.db.CancelTask(e.ctx, actor, id, "Not needed")
			return err
		}},
		{"requeue", func(e *env, id, actor string) error {
			_, err := e.db.RequeueTask(e.ctx, actor, id, "Key is in the vault")
			return err
		}},
		{"changes", func(e *env, id, actor string) error {
			_, err := e.db.RequestChanges(e.ctx, actor, id, "Add tests")
			return err
		}},
	} {
		actions[a.name] = a
	}
}

var errNoTask = fmt.Errorf("no task claimed")

// effect is what an allowed transition writes.
type effect struct {
	report    *relay.Report // kind and message of the new report, if any
	eventTo   string        // recipient of the new event, "" for none
	eventType string
	summary   string
}

var effects = map[string]effect{
	"claim":    {eventTo: "alice", eventType: relay.EventTaskClaimed, summary: "bob claimed “Fix the bug”."},
	"progress": {report: &relay.Report{Kind: relay.ReportProgress, Message: "Halfway"}, eventTo: "alice", eventType: relay.EventTaskProgress, summary: "bob: Halfway"},
	"complete": {report: &relay.Report{Kind: relay.ReportCompleted, Message: "Fixed", Result: "patch.diff"}, eventTo: "alice", eventType: relay.EventTaskCompleted, summary: "bob: Fixed"},
	"block":    {report: &relay.Report{Kind: relay.ReportBlocked, Message: "Need the key"}, eventTo: "alice", eventType: relay.EventTaskBlocked, summary: "bob: Need the key"},
	"release":  {report: &relay.Report{Kind: relay.ReportProgress, Message: "Released: Out of time"}, eventTo: "alice", eventType: relay.EventTaskRequeued, summary: "bob released “Fix the bug”: Out of time"},
	"renew":    {},
	"cancel":   {report: &relay.Report{Kind: relay.ReportProgress, Message: "Cancelled by alice: Not needed"}, eventTo: "bob", eventType: relay.EventTaskCancelled, summary: "alice cancelled “Fix the bug”: Not needed"},
	"requeue":  {report: &relay.Report{Kind: relay.ReportProgress, Message: "Requeued by alice: Key is in the vault"}, eventTo: "bob", eventType: relay.EventTaskRequeued, summary: "alice requeued “Fix the bug”: Key is in the vault"},
	"changes":  {report: &relay.Report{Kind: relay.ReportChanges, Message: "Add tests"}, eventTo: "bob", eventType: relay.EventTaskRequeued, summary: "alice asked for changes to “Fix the bug”: Add tests"},
}

// Who may act: the holder (bob) for claim and holder actions, the sender
// (alice) for the rest.
var rightActor = map[string]string{
	"claim": "bob", "progress": "bob", "complete": "bob", "block": "bob", "release": "bob", "renew": "bob",
	"cancel": "alice", "requeue": "alice", "changes": "alice",
}

func TestStateMachine(t *testing.T) {
	const denied = relay.ETaskUpdateDenied
	const invalid = relay.EInvalidTaskState
	const none = "no task" // claim finds nothing; the task is untouched
	// want is the resulting status, or an error code, or none.
	table := map[relay.TaskStatus]map[string]string{
		relay.StatusQueued: {
			"claim": "claimed", "progress": denied, "complete": denied, "block": denied, "release": denied, "renew": denied,
			"cancel": "cancelled", "requeue": invalid, "changes": invalid,
		},
		relay.StatusClaimed: {
			"claim": none, "progress": "claimed", "complete": "completed", "block": "blocked", "release": "queued", "renew": "claimed",
			"cancel": "cancelled", "requeue": invalid, "changes": invalid,
		},
		relay.StatusBlocked: {
			"claim": none, "progress": denied, "complete": denied, "block": denied, "release": denied, "renew": denied,
			"cancel": "cancelled", "requeue": "queued", "changes": invalid,
		},
		relay.StatusCompleted: {
			"claim": none, "progress": denied, "complete": denied, "block": denied, "release": denied, "renew": denied,
			"cancel": invalid, "requeue": invalid, "changes": "queued",
		},
		relay.StatusCancelled: {
			"claim": none, "progress": denied, "complete": denied, "block": denied, "release": denied, "renew": denied,
			"cancel": invalid, "requeue": invalid, "changes": invalid,
		},
	}
	for _, from := range relay.Statuses {
		for name, want := range table[from] {
			t.Run(string(from)+"/"+name, func(t *testing.T) {
				e := newEnv(t, store.Options{})
				e.agents("alice", "bob")
				before := reach(e, from)
				err := actions[name].do(e, before.ID, rightActor[name])
				after := e.task(before.ID)
				alice, bob := e.updates("alice"), e.updates("bob")
				newEvents := append(alice.Updates, bob.Updates...)

				if !relay.TaskStatus(want).Valid() {
					switch {
					case want == none:
						if err != errNoTask {
							t.Fatalf("claim = %v, want nothing claimed", err)
						}
					default:
						wantCode(t, err, want)
						if want == invalid {
							var re *relay.Error
							if !asRelayError(err, &re) || re.Details["status"] != string(from) {
								t.Errorf("details = %+v, want status %s", re, from)
							}
						}
						if want == denied {
							var re *relay.Error
							if !asRelayError(err, &re) || re.Details["taskStatus"] != string(from) {
								t.Errorf("details = %+v, want taskStatus %s", re, from)
							}
						}
					}
					if after.Status != from || after.UpdatedAt != before.UpdatedAt || len(after.Reports) != len(before.Reports) || len(newEvents) != 0 {
						t.Fatalf("refused action changed the task: %+v, events %+v", after, newEvents)
					}
					return
				}

				if err != nil {
					t.Fatalf("%s from %s: %v", name, from, err)
				}
				if string(after.Status) != want {
					t.Fatalf("status = %s, want %s", after.Status, want)
				}
				eff := effects[name]
				switch {
				case eff.report == nil && len(after.Reports) != len(before.Reports):
					t.Errorf("unexpected report %+v", after.Reports[len(after.Reports)-1])
				case eff.report != nil:
					if len(after.Reports) != len(before.Reports)+1 {
						t.Fatalf("reports = %+v, want one more", after.Reports)
					}
					r := after.Reports[len(after.Reports)-1]
					if r.Kind != eff.report.Kind || r.Message != eff.report.Message || r.Result != eff.report.Result || r.ID == "" || r.CreatedAt == "" {
						t.Errorf("report = %+v, want %+v", r, *eff.report)
					}
				}
				if eff.eventTo == "" {
					if len(newEvents) != 0 {
						t.Errorf("unexpected events %+v", newEvents)
					}
				} else {
					if len(newEvents) != 1 {
						t.Fatalf("events = %+v, want one", newEvents)
					}
					ev := newEvents[0]
					if ev.RecipientSlug != eff.eventTo || ev.Type != eff.eventType || ev.Summary != eff.summary || ev.TaskID != before.ID {
						t.Errorf("event = %+v, want %s to %s: %q", ev, eff.eventType, eff.eventTo, eff.summary)
					}
				}
				if after.UpdatedAt <= before.UpdatedAt {
					t.Errorf("updatedAt not bumped: %s -> %s", before.UpdatedAt, after.UpdatedAt)
				}
				switch after.Status {
				case relay.StatusQueued:
					if after.ClaimedAt != "" || after.ClaimedVia != "" || after.LeaseExpiresAt != "" {
						t.Errorf("back in the queue with claim fields %+v", after)
					}
				case relay.StatusClaimed:
					if after.ClaimedAt == "" || after.ClaimedVia == "" || after.LeaseExpiresAt == "" {
						t.Errorf("claimed without claim fields %+v", after)
					}
				default:
					if after.LeaseExpiresAt != "" {
						t.Errorf("%s task keeps a lease", after.Status)
					}
					if before.ClaimedAt != "" && (after.ClaimedAt != before.ClaimedAt || after.ClaimedVia != before.ClaimedVia) {
						t.Errorf("%s cleared claimedAt/claimedVia", name)
					}
				}
				if name == "renew" && after.LeaseExpiresAt == before.LeaseExpiresAt {
					// reach() claims with the 900 s default; renew sets 120 s from a later now.
					t.Errorf("renew left the lease at %s", after.LeaseExpiresAt)
				}
			})
		}
	}
}

func asRelayError(err error, target **relay.Error) bool {
	re, ok := err.(*relay.Error)
	if ok {
		*target = re
	}
	return ok
}

func TestWrongActorIsRefused(t *testing.T) {
	cases := []struct {
		from   relay.TaskStatus
		action string
		actor  string
		code   string
	}{
		{relay.StatusClaimed, "progress", "alice", relay.ETaskUpdateDenied},
		{relay.StatusClaimed, "complete", "carol", relay.ETaskUpdateDenied},
		{relay.StatusClaimed, "block", "alice", relay.ETaskUpdateDenied},
		{relay.StatusClaimed, "release", "carol", relay.ETaskUpdateDenied},
		{relay.StatusClaimed, "renew", "alice", relay.ETaskUpdateDenied},
		{relay.StatusQueued, "cancel", "bob", relay.ETaskCancelDenied},
		{relay.StatusClaimed, "cancel", "carol", relay.ETaskCancelDenied},
		{relay.StatusBlocked, "requeue", "bob", relay.ETaskRequeueDenied},
		{relay.StatusCompleted, "changes", "bob", relay.ETaskChangesDenied},
		{relay.StatusCompleted, "changes", "carol", relay.ETaskChangesDenied},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s/%s", tc.from, tc.action, tc.actor), func(t *testing.T) {
			e := newEnv(t, store.Options{})
			e.agents("alice", "bob", "carol")
			before := reach(e, tc.from)
			err := actions[tc.action].do(e, before.ID, tc.actor)
			wantCode(t, err, tc.code)
			if after := e.task(before.ID); after.Status != before.Status || len(after.Reports) != len(before.Reports) {
				t.Fatalf("refused action changed the task: %+v", after)
			}
		})
	}
}
