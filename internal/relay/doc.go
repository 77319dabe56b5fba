// Package relay is the domain of Crosschat Relay: agents, tasks, reports, the
// update journal, invites and tokens, the rules that govern them, and the
// error codes every adapter maps to its own transport.
//
// It imports only the standard library. Adapters (internal/store,
// internal/mcp, internal/web, internal/worker) depend on relay; relay depends
// on none of them.
package relay
