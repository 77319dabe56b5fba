package relay_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestCheckOpenTasks: a sender below the cap may post; at the cap it is
// refused, with the count and the cap in the details.
func TestCheckOpenTasks(t *testing.T) {
	tests := []struct {
		open, limit int
		code        string
	}{
		{0, 1, ""},
		{49, 50, ""},
		{50, 50, relay.ETooManyOpenTasks},
		{0, 0, relay.ETooManyOpenTasks},
	}
	for _, tt := range tests {
		err := relay.CheckOpenTasks(tt.open, tt.limit)
		if got := relay.ErrorCode(err); got != tt.code {
			t.Errorf("CheckOpenTasks(%d, %d) = %v, want code %q", tt.open, tt.limit, err, tt.code)
			continue
		}
		if err == nil {
			continue
		}
		d := relay.AsError(err).Details
		if d["openTasks"] != tt.open || d["limit"] != tt.limit {
			t.Errorf("details = %v", d)
		}
		if !strings.HasPrefix(relay.ErrorMessage(err), "You already have ") {
			t.Errorf("message = %q", relay.ErrorMessage(err))
		}
	}
}

// TestCheckRecipient: a retired agent takes no new tasks.
func TestCheckRecipient(t *testing.T) {
	if err := relay.CheckRecipient(relay.Agent{Slug: "bob"}); err != nil {
		t.Errorf("active recipient: %v", err)
	}
	err := relay.CheckRecipient(relay.Agent{Slug: "bob", RetiredAt: "2026-01-01T00:00:00Z"})
	if relay.ErrorCode(err) != relay.EUnknownAgent || relay.AsError(err).Details["retired"] != true {
		t.Errorf("retired recipient: %v", err)
	}
}

// TestCheckSelfSession: an agent's post from a live session naming that
// same session (by id or by its told name) as target is refused; anything
// else passes, and the name is read only when the ids differ.
func TestCheckSelfSession(t *testing.T) {
	self := relay.PostTaskInput{SenderSlug: "ann", RecipientSlug: "ann", FromAgent: true, ReplySession: "s-1", TargetSession: "s-1"}
	with := func(f func(*relay.PostTaskInput)) relay.PostTaskInput {
		in := self
		f(&in)
		return in
	}
	tests := []struct {
		name      string
		in        relay.PostTaskInput
		told      string // the posting session's name
		code      string
		readsName bool
	}{
		{"same id", self, "", relay.ESelfTask, false},
		{"its own name", with(func(in *relay.PostTaskInput) { in.TargetSession = "main" }), "main", relay.ESelfTask, true},
		{"another session", with(func(in *relay.PostTaskInput) { in.TargetSession = "s-2" }), "main", "", true},
		{"a session with no name", with(func(in *relay.PostTaskInput) { in.TargetSession = "s-2" }), "", "", true},
		{"to another agent", with(func(in *relay.PostTaskInput) { in.RecipientSlug = "bob" }), "", "", false},
		{"not from the agent's token", with(func(in *relay.PostTaskInput) { in.FromAgent = false }), "", "", false},
		{"no live session", with(func(in *relay.PostTaskInput) { in.ReplySession = "" }), "", "", false},
		{"no target", with(func(in *relay.PostTaskInput) { in.TargetSession = "" }), "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := false
			err := relay.CheckSelfSession(tt.in, func() (string, error) { read = true; return tt.told, nil })
			if got := relay.ErrorCode(err); got != tt.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tt.code)
			}
			if read != tt.readsName {
				t.Errorf("read the name: %v, want %v", read, tt.readsName)
			}
			if err != nil && relay.AsError(err).Details["session"] != tt.in.ReplySession {
				t.Errorf("details = %v", relay.AsError(err).Details)
			}
		})
	}
	boom := errors.New("disk gone")
	in := with(func(in *relay.PostTaskInput) { in.TargetSession = "main" })
	if err := relay.CheckSelfSession(in, func() (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("a failed read: %v, want it returned", err)
	}
}

// TestCheckParent: a post may link only to a task its sender sent or received.
func TestCheckParent(t *testing.T) {
	parent := relay.Task{SenderSlug: "ann", RecipientSlug: "bob"}
	for sender, code := range map[string]string{"ann": "", "bob": "", "cy": relay.ETaskAccessDenied} {
		if got := relay.ErrorCode(relay.CheckParent(parent, sender)); got != code {
			t.Errorf("CheckParent(%s) = %q, want %q", sender, got, code)
		}
	}
}

// TestPostHops: a post is one hop past its parent, or past the task the
// posting session handles when that one is further on, counted in that
// task's conversation.
func TestPostHops(t *testing.T) {
	parent := relay.Task{ID: "p", ConversationID: "c1", Hops: 1}
	tests := []struct {
		name string
		held *relay.Task
		hops int
		conv string
	}{
		{"no session task", nil, 2, "c1"},
		{"the session handles the parent", &relay.Task{ID: "p", ConversationID: "c1", Hops: 1}, 2, "c1"},
		{"the session's task is further on", &relay.Task{ID: "h", ConversationID: "c2", Hops: 3}, 4, "c2"},
		{"the session's task is level", &relay.Task{ID: "h", ConversationID: "c2", Hops: 1}, 2, "c1"},
		{"the session's task is behind", &relay.Task{ID: "h", ConversationID: "c2", Hops: 0}, 2, "c1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hops, conv := relay.PostHops(parent, tt.held)
			if hops != tt.hops || conv != tt.conv {
				t.Errorf("PostHops = %d, %s; want %d, %s", hops, conv, tt.hops, tt.conv)
			}
		})
	}
}

// TestCheckChain: a hand-off up to the limit passes; one past it is
// refused with chain_limit naming the depth, the limit and the conversation.
func TestCheckChain(t *testing.T) {
	tests := []struct {
		hops, limit int
		code        string
	}{
		{1, 3, ""},
		{3, 3, ""},
		{4, 3, relay.EChainLimit},
		{1, 0, relay.EChainLimit},
	}
	for _, tt := range tests {
		err := relay.CheckChain(tt.hops, tt.limit, "c1")
		if got := relay.ErrorCode(err); got != tt.code {
			t.Errorf("CheckChain(%d, %d) = %v, want %q", tt.hops, tt.limit, err, tt.code)
			continue
		}
		if err == nil {
			continue
		}
		want := map[string]any{"depth": tt.hops, "limit": tt.limit, "conversationId": "c1"}
		if d := relay.AsError(err).Details; !reflect.DeepEqual(d, want) {
			t.Errorf("details = %v, want %v", d, want)
		}
	}
}

// TestInferredParent: a chain_limit refusal of a post from a session that
// handles a task names that task; any other error, or no such task, passes
// through unchanged.
func TestInferredParent(t *testing.T) {
	chain := relay.CheckChain(4, 3, "c1")
	other := relay.Errorf(relay.ETaskAccessDenied, "no")
	tests := []struct {
		name     string
		err      error
		held     string
		explicit bool
		prefix   string // "" for unchanged
	}{
		{"no session task", chain, "", false, ""},
		{"another refusal", other, "h1", false, ""},
		{"inferred", chain, "h1", false, "This session is working on the task h1, so what it posts continues that task's conversation. This task would be 4"},
		{"named another parent", chain, "h1", true, "This session is working on the task h1, so what it posts continues that task's conversation, whichever parentTaskId it names. This task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := relay.InferredParent(tt.err, tt.held, tt.explicit)
			if tt.prefix == "" {
				if got != tt.err {
					t.Fatalf("got %v, want the error unchanged", got)
				}
				return
			}
			e := relay.AsError(got)
			if e.Code != relay.EChainLimit || !strings.HasPrefix(e.Message, tt.prefix) {
				t.Fatalf("got %v", got)
			}
			if e.Details["parentTaskId"] != tt.held || e.Details["inferredFromSession"] != true || e.Details["limit"] != 3 {
				t.Errorf("details = %v", e.Details)
			}
			if relay.AsError(tt.err).Message == e.Message {
				t.Error("the original error was changed in place")
			}
		})
	}
}

// TestCheckCapabilities: a post requiring capabilities the recipient does
// not advertise is refused, naming the missing ones in order.
func TestCheckCapabilities(t *testing.T) {
	have := []string{"code-execution", "web-search"}
	tests := []struct {
		need    []string
		missing []string
	}{
		{nil, nil},
		{[]string{"web-search"}, nil},
		{[]string{"image-input", "web-search", "file-system"}, []string{"image-input", "file-system"}},
	}
	for _, tt := range tests {
		err := relay.CheckCapabilities("bob", have, tt.need)
		if tt.missing == nil {
			if err != nil {
				t.Errorf("need %v: %v", tt.need, err)
			}
			continue
		}
		e := relay.AsError(err)
		if e.Code != relay.ERecipientLacksCapability || !reflect.DeepEqual(e.Details["missingCapabilities"], tt.missing) {
			t.Errorf("need %v: %v %v", tt.need, err, e.Details)
		}
		if want := "Cannot assign to bob: it does not advertise " + strings.Join(tt.missing, ", ") + "."; e.Message != want {
			t.Errorf("message = %q, want %q", e.Message, want)
		}
	}
}
