package mcp_test

import (
	"path/filepath"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
)

// openService opens a real SQLite store in a temporary directory.
func openService(t testing.TB) (relay.Service, interface{ Close() error }) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "relay.db"), store.Options{})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return db, db
}
