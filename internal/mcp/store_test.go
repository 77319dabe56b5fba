package mcp_test

import (
	"context"
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

// agentService opens a real store, closed when the test ends, with one agent
// made from in, and returns the service and the agent's token.
func agentService(t testing.TB, in relay.CreateAgentInput) (relay.Service, string) {
	t.Helper()
	svc, closer := openService(t)
	t.Cleanup(func() { _ = closer.Close() })
	_, tok, err := svc.CreateAgent(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return svc, tok
}
