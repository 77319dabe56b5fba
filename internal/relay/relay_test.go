package relay_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure slug arguments resolve per the identity rules.
func TestActingSlug(t *testing.T) {
	agent := relay.Principal{Kind: relay.PrincipalAgent, Slug: "bob"}
	tests := []struct {
		name     string
		p        relay.Principal
		supplied string
		want     string
		code     string
	}{
		{"agent omits", agent, "", "bob", ""},
		{"agent names itself, normalized", agent, " Bob ", "bob", ""},
		{"agent names another", agent, "alice", "", relay.EIdentityMismatch},
		{"admin names", relay.Admin, "alice", "alice", ""},
		{"admin omits", relay.Admin, "", "", relay.ESlugRequired},
		{"bad slug", agent, "a", "", relay.EInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.ActingSlug("senderSlug", tt.supplied)
			if code := relay.ErrorCode(err); code != tt.code || got != tt.want {
				t.Fatalf("got %q %q, want %q %q (%v)", got, code, tt.want, tt.code, err)
			}
		})
	}
	_, err := agent.ActingSlug("senderSlug", "alice")
	e := relay.AsError(err)
	if e.Details["tokenSlug"] != "bob" || e.Details["senderSlug"] != "alice" || e.Code != relay.EIdentityMismatch {
		t.Fatalf("details %v code %s", e.Details, e.Code)
	}
}

// Ensure validation trims, bounds and normalizes.
func TestValidate(t *testing.T) {
	long := strings.Repeat("x", relay.MaxShortText+1)
	tests := []struct {
		name string
		in   relay.PostTaskInput
		code string
	}{
		{"ok", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: " t ", Instructions: "i"}, ""},
		{"title too long", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: long, Instructions: "i"}, relay.EInvalidRequest},
		{"empty instructions", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "  "}, relay.EInvalidRequest},
		{"bad priority", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "i", Priority: 4}, relay.EInvalidRequest},
		{"bad parent", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "i", ParentTaskID: "x"}, relay.EInvalidRequest},
		{"too many caps", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "i", RequiredCapabilities: make([]string, 33)}, relay.EInvalidRequest},
		{"an agent to itself", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: " A1 ", Title: "t", Instructions: "i", FromAgent: true}, relay.ESelfTask},
		{"an agent to itself naming a blank session", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "a1", Title: "t", Instructions: "i", FromAgent: true, TargetSession: "  "}, relay.ESelfTask},
		{"an agent to its own session", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "a1", Title: "t", Instructions: "i", FromAgent: true, TargetSession: "my session"}, ""},
		{"the operator to an agent as itself", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "a1", Title: "t", Instructions: "i"}, ""},
		{"a session name with a tab", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "i", TargetSession: "a\tb"}, relay.EInvalidRequest},
		{"a session name too long", relay.PostTaskInput{SenderSlug: "a1", RecipientSlug: "b1", Title: "t", Instructions: "i", TargetSession: strings.Repeat("s", relay.MaxTargetSession+1)}, relay.EInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.in.Validate()
			if code := relay.ErrorCode(err); code != tt.code {
				t.Fatalf("code %q, want %q (%v)", code, tt.code, err)
			}
			if err == nil && (out.Title != "t" || out.Priority != relay.PriorityNormal) {
				t.Fatalf("not normalized: %+v", out)
			}
		})
	}
	caps, err := relay.Capabilities("c", []string{"b", " a ", "b"}, 1)
	if err != nil || strings.Join(caps, ",") != "a,b" {
		t.Fatalf("caps %v %v", caps, err)
	}
}

// Ensure a waiter taken before a wake sees it, and Close wakes everyone for good.
func TestWaiters(t *testing.T) {
	var w relay.Waiters
	ch := w.Watch("bob")
	other := w.Watch("alice")
	w.Wake("bob")
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("bob not woken")
	}
	select {
	case <-other:
		t.Fatal("alice woken by bob's wake")
	default:
	}
	w.Close()
	select {
	case <-other:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not wake alice")
	}
	select {
	case <-w.Watch("carol"):
	default:
		t.Fatal("watch after close must be already closed")
	}
}

// Ensure WakeAll wakes every current watcher but, unlike Close, not later ones.
func TestWaitersWakeAll(t *testing.T) {
	var w relay.Waiters
	bob, alice := w.Watch("bob"), w.Watch("alice")
	w.WakeAll()
	for name, ch := range map[string]<-chan struct{}{"bob": bob, "alice": alice} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not woken", name)
		}
	}
	select {
	case <-w.Watch("carol"):
		t.Fatal("a watch after WakeAll must wait for the next wake")
	default:
	}
}

// Ensure the broker delivers in order and drops a subscriber that falls behind.
func TestBroker(t *testing.T) {
	var b relay.Broker
	fast, cancelFast := b.Subscribe(10)
	defer cancelFast()
	slow, _ := b.Subscribe(1)
	b.Publish(relay.Change{Type: "a"}, relay.Change{Type: "b"})
	if c := <-fast; c.Type != "a" {
		t.Fatalf("first %q", c.Type)
	}
	if c := <-fast; c.Type != "b" {
		t.Fatalf("second %q", c.Type)
	}
	<-slow // the one that fit
	if _, ok := <-slow; ok {
		t.Fatal("slow subscriber should have been dropped")
	}
}

// Ensure tokens have their prefixes and lengths, and hashing is stable hex.
func TestTokens(t *testing.T) {
	if tok := relay.NewAgentToken(); !strings.HasPrefix(tok, "cca_") || len(tok) != 47 {
		t.Fatalf("agent token %q", tok)
	}
	if tok := relay.NewInviteCode(); !strings.HasPrefix(tok, "cci_") || len(tok) != 36 {
		t.Fatalf("invite code %q", tok)
	}
	if h := relay.HashToken("x"); len(h) != 64 || h != relay.HashToken("x") {
		t.Fatalf("hash %q", h)
	}
	if id := relay.NewID(); len(id) != 36 || id[14] != '7' || !strings.ContainsRune("89ab", rune(id[19])) {
		t.Fatalf("id %q: want a version 7 UUID", id)
	}
	if _, err := relay.TaskID("id", relay.NewID()); err != nil {
		t.Fatal(err)
	}
}

// NewID's ids carry the millisecond they were made in, and so an id made
// in a later millisecond sorts after one made earlier; ids are unique.
func TestNewIDIsTimeOrdered(t *testing.T) {
	before := time.Now().UnixMilli()
	first := relay.NewID()
	after := time.Now().UnixMilli()
	ms, err := strconv.ParseInt(strings.ReplaceAll(first[:13], "-", ""), 16, 64)
	if err != nil || ms < before || ms > after {
		t.Fatalf("id %s carries %d (%v), want a time in [%d, %d]", first, ms, err, before, after)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().UnixMilli() <= after {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not move on")
		}
	}
	if later := relay.NewID(); later <= first {
		t.Errorf("id made later %s sorts before %s", later, first)
	}
	seen := map[string]bool{}
	for range 10000 {
		id := relay.NewID()
		if seen[id] {
			t.Fatalf("id %s made twice", id)
		}
		seen[id] = true
	}
}
