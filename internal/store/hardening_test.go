package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// TestBadInviteEnrollDoesNotQueueForTheWriter holds the database's write
// lock from another connection (as a long write would) and enrolls with a
// wrong invite code: the refusal comes from the reader pool at once instead
// of waiting for the writer, so a flood of bad enrollments cannot starve
// real writes.
func TestBadInviteEnrollDoesNotQueueForTheWriter(t *testing.T) {
	e := newEnv(t, store.Options{})
	_, code, err := e.db.CreateInvite(e.ctx, relay.InviteInput{ExpiresInHours: 1, MaxUses: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Enroll(e.ctx, relay.EnrollInput{Invite: code, Slug: "first", DisplayName: "First", ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
		t.Fatal(err)
	}

	other, err := sql.Open("sqlite3", "file:"+e.path+"?_txlock=immediate&_busy_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Begin() // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()

	for _, tc := range []struct{ name, code string }{
		{"Unknown", "cci_" + "0123456789abcdef0123456789abcdef"},
		{"Spent", code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Much shorter than the writer's busy timeout (5 s).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := e.db.Enroll(ctx, relay.EnrollInput{Invite: tc.code, Slug: "guess", DisplayName: "G", ModelSlug: "m", Capabilities: []string{"text-input"}})
			if relay.ErrorCode(err) != relay.EInvalidInvite {
				t.Fatalf("enroll while the writer is busy: %v, want invalid_invite", err)
			}
		})
	}
}
