// Package relay is the domain of Crosschat Relay: agents, tasks, reports, the
// update journal, invites and tokens, the rules that govern them, and the
// error codes every adapter maps to its own transport.
//
// The task lifecycle's rules are pure functions over values already read:
// who may take which action on a task in which state (lifecycle.go), the
// checks of a post (lifecycle_post.go) and a worker run token's reach
// (lifecycle_run.go). internal/store runs them inside the write that makes
// the change, so a rule and the change it allows are one transaction.
//
// It imports only the standard library. Adapters (internal/store,
// internal/mcp, internal/web, internal/worker) depend on relay; relay depends
// on none of them.
package relay
