package store

import (
	"context"
	"sync"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The two orderings the cache's promise rests on, made deterministic with
// the test hooks (authcache.go).

// setHook sets *hook to fn for the test.
func setHook(t *testing.T, hook *func(), fn func()) {
	t.Helper()
	*hook = fn
	t.Cleanup(func() { *hook = nil })
}

// newToken creates slug with a token and returns it.
func newToken(t *testing.T, db *DB, slug string) string {
	t.Helper()
	_, token, err := db.CreateAgent(context.Background(), relay.CreateAgentInput{Slug: slug, DisplayName: slug, ModelSlug: "m", Capabilities: []string{"text-input"}})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// A lookup that read the token as valid, with the revoke committed right
// after its read, must not keep that answer as current: the generation it
// keeps it under is the one from before its read.
func TestAuthAnswerReadBeforeARevokeIsNotKept(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	token := newToken(t, db, "coder")
	var once sync.Once
	setHook(t, &testHookAuthRead, func() {
		once.Do(func() {
			if err := db.RevokeToken(ctx, "coder"); err != nil {
				t.Error(err)
			}
		})
	})
	if p, err := db.Authenticate(ctx, token); err != nil || p.Slug != "coder" {
		t.Fatalf("first lookup (read before the revoke) = %+v, %v", p, err)
	}
	if p, err := db.Authenticate(ctx, token); relay.ErrorCode(err) != relay.EUnauthorized {
		t.Fatalf("lookup after the revoke returned = %+v, %v; want unauthorized", p, err)
	}
}

// A batch that revokes a kept token has dropped it before anyone is woken
// or answered.
func TestRevokeDropsKeptAnswersBeforeAnswering(t *testing.T) {
	db := openGroup(t)
	ctx := context.Background()
	token := newToken(t, db, "coder")
	if _, err := db.Authenticate(ctx, token); err != nil {
		t.Fatal(err)
	}
	var (
		revoking bool // set and read by the writer goroutine only, in the hook
		checked  bool
		seen     error
	)
	setHook(t, &testHookCommitted, func() {
		if !revoking {
			return
		}
		revoking, checked = false, true
		_, seen = db.Authenticate(ctx, token) // on the writer goroutine: a read, not a write
	})
	err := db.write(ctx, "revoke for the test", func(t *tx) error {
		revoking = true
		_, err := t.exec(`UPDATE agents SET token_hash = NULL WHERE slug = 'coder'`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !checked || relay.ErrorCode(seen) != relay.EUnauthorized {
		t.Fatalf("before the revoke was answered, the token authenticated (checked %v, err %v)", checked, seen)
	}
}
