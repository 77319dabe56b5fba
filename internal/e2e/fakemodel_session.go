package e2e

import (
	"context"
	"regexp"
	"strings"
)

// The session script (Script.Session): the fake model of the session worker
// tests. A prompt without a request token is a person's own turn that makes
// the session (SeedAnswer at once). A prompt with one is a task the relay
// delivered into the session: the answer is SessionAnswer and the token; a
// prompt with HoldMarker first answers PartialAnswer and the token together
// with a call of the relay's whoami tool, then holds the request that brings
// the tool's result until Release (or until the CLI goes away), and then
// answers HeldAnswer and the token. A prompt with HoldFirstMarker holds its
// very first request, before the turn wrote anything, until Release (or
// until the CLI goes away), and then answers SessionAnswer and the token.
const (
	SeedAnswer    = "SEED-ANSWER "
	SessionAnswer = "SESSION-ANSWER "
	PartialAnswer = "PARTIAL-ANSWER "
	HeldAnswer    = "HELD-ANSWER "
	HoldMarker    = "HOLD-THIS-TURN"
	// HoldFirstMarker holds a delivered turn before any answer.
	HoldFirstMarker = "HOLD-BEFORE-ANSWER"
)

var requestToken = regexp.MustCompile(`crosschat-req-[0-9a-f]+`)

// SessionTurn is one delivered task as the fake model saw it.
type SessionTurn struct {
	// Token is the request token of its prompt.
	Token string
	// History tells whether its first request carried the conversation the
	// session had before: a person's turn (the seed prompt and SeedAnswer).
	History bool
	// Before lists the request tokens of earlier delivered turns whose
	// answers its first request carried (in order).
	Before []string
}

// sessionStep answers a main-loop request of the session script; f.mu is held.
func (f *FakeModel) sessionStep(t turn) step {
	last := -1
	for i, it := range t.items {
		if it.role == "user" && it.kind == "text" && strings.TrimSpace(it.text) != "" && !strings.HasPrefix(strings.TrimSpace(it.text), "<") {
			last = i
		}
	}
	if last < 0 {
		return step{text: "ok"}
	}
	prompt := t.items[last].text
	token := requestToken.FindString(prompt)
	// The CLIs rebuild a resumed conversation their own way (Claude Code
	// merges a turn's tool results into the next prompt's message), so a
	// turn's progress is counted by its requests, not read from the order.
	n := 0
	for _, tok := range f.seen.SessionRequests {
		if token != "" && tok == token {
			n++
		}
	}
	f.seen.SessionRequests = append(f.seen.SessionRequests, token)
	if token == "" {
		return step{text: SeedAnswer + f.script.Marker + ": noted."}
	}
	if n == 0 {
		turn := SessionTurn{Token: token}
		for _, it := range t.items[:last] {
			if it.role == "assistant" && it.kind == "text" && strings.Contains(it.text, SeedAnswer+f.script.Marker) {
				turn.History = true
			}
			if it.role == "assistant" && it.kind == "text" {
				if tok := requestToken.FindString(it.text); tok != "" && (len(turn.Before) == 0 || turn.Before[len(turn.Before)-1] != tok) {
					turn.Before = append(turn.Before, tok)
				}
			}
		}
		f.seen.SessionTurns = append(f.seen.SessionTurns, turn)
	}
	if strings.Contains(prompt, HoldFirstMarker) && n == 0 {
		f.seen.Held = append(f.seen.Held, token)
		return step{text: SessionAnswer + f.script.Marker + "\n" + token, hold: true}
	}
	if !strings.Contains(prompt, HoldMarker) {
		return step{text: SessionAnswer + f.script.Marker + "\n" + token}
	}
	if n == 0 {
		name, ns := findTool(t.tools, "whoami")
		return step{text: PartialAnswer + f.script.Marker + "\n" + token, tool: name, namespace: ns, args: map[string]any{}}
	}
	f.seen.Held = append(f.seen.Held, token)
	return step{text: HeldAnswer + f.script.Marker + "\n" + token, hold: true}
}

// findTool finds an offered MCP tool whose name ends with name, and its
// Responses namespace.
func findTool(tools []string, name string) (tool, namespace string) {
	for _, t := range tools {
		ns, n, nested := strings.Cut(t, "/")
		if !nested {
			ns, n = "", t
		}
		if (nested || strings.HasPrefix(n, "mcp_")) && strings.HasSuffix(n, name) {
			return n, ns
		}
	}
	return "", ""
}

// holdRequest blocks a held answer until Release or the end of ctx (the
// CLI went away); it reports whether the answer should still be sent.
func (f *FakeModel) holdRequest(ctx context.Context) bool {
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	select {
	case <-release:
		return true
	case <-ctx.Done():
		return false
	}
}

// Release lets every held answer go (a later hold waits for the next Release).
func (f *FakeModel) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release)
	f.release = make(chan struct{})
}
