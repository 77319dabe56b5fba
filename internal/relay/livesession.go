package relay

import (
	"context"
	"strings"
	"time"
)

// Live sessions: an agent-CLI session (a Claude Code session, a Codex
// thread) connected to the relay through `crosschat-relay channel` or
// `crosschat-relay monitor --session`. The session says who it is; the relay
// answers it alone (replies to its tasks reach its push stream only) and
// counts what it posts while it works on a task as a hop of that task's
// conversation.

// Where a live session names itself.
const (
	// LiveSessionHeader carries the session id on MCP requests (the channel
	// sets it on every call it forwards). It is not the dashboard's
	// X-Crosschat-Session header, which carries a sign-in secret.
	LiveSessionHeader = "X-Crosschat-Live-Session"
	// LiveSessionParam and LiveSessionNameParam carry the session id and
	// its name (optional) on the push stream's URL.
	LiveSessionParam     = "session"
	LiveSessionNameParam = "sessionName"
)

// Live session limits.
const (
	// MaxLiveSessionID bounds a session id, in bytes.
	MaxLiveSessionID = 128
	// MaxLiveSessionName bounds a session's name, in characters.
	MaxLiveSessionName = MaxTargetSession
	// MaxLiveSessionsPerAgent is how many sessions the relay keeps per agent
	// (the most recently seen).
	MaxLiveSessionsPerAgent = 200
	// LiveSessionRetention is how long a session not seen again is kept
	// (for resolving its name; a post through it counts as seen).
	LiveSessionRetention = 7 * 24 * time.Hour
	// LiveStreamWindow is how long after its push stream (channel or
	// `monitor --session`) was last seen open a session counts as live
	// for delivery: the agent's unbound workers and sessionless claims
	// leave the tasks aimed at it. An open stream refreshes the record
	// every 2 minutes; a post alone never makes a session live.
	LiveStreamWindow = 5 * time.Minute
)

// LiveSession is one agent-CLI session the relay has heard from.
type LiveSession struct {
	// AgentSlug is the agent the session acts as (its token's).
	AgentSlug string `json:"agentSlug"`
	// ID is the CLI's own session id (Claude Code's CLAUDE_CODE_SESSION_ID).
	ID string `json:"id"`
	// Name is the session's name when it told one, else "".
	Name string `json:"name,omitempty"`
	// LastSeen is when the relay last heard from it (a push stream open or
	// kept open, a post through it).
	LastSeen string `json:"lastSeen"`
	// StreamSeen is when its push stream was last seen open, "" for never
	// (a session that only posted): within LiveStreamWindow it is live
	// for delivery.
	StreamSeen string `json:"streamSeen,omitempty"`
}

// LiveSessionID checks a session id: 1..MaxLiveSessionID characters among
// letters, digits and . _ : - (a UUID, a Codex thread id). "" stays "".
func LiveSessionID(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if len(s) > MaxLiveSessionID {
		return "", Errorf(EInvalidRequest, "%s: must be at most %d characters (got %d).", field, MaxLiveSessionID, len(s))
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return "", Errorf(EInvalidRequest, "%s: a session id holds only letters, digits and . _ : - (got %q).", field, s)
		}
	}
	return s, nil
}

// LiveSessionName checks a session's name: "" or up to MaxLiveSessionName
// characters of text without control characters.
func LiveSessionName(field, s string) (string, error) {
	t, err := Text(field, s, 0, MaxLiveSessionName)
	if err != nil {
		return "", err
	}
	if strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", Errorf(EInvalidRequest, "%s: must not hold control characters.", field)
	}
	return t, nil
}

// NamesLiveSession reports whether a request by p may name a live session:
// only an agent's own token can. The admin token and a worker run's token
// never act as a live session: the session they name (LiveSessionHeader on
// /mcp, LiveSessionParam on the push stream) is ignored, so they record no
// session and get no session's view.
func NamesLiveSession(p Principal) bool {
	return p.Kind == PrincipalAgent && p.RunTaskID == ""
}

type liveSessionKey struct{}

// WithLiveSession returns ctx carrying the live session id a request came
// through (the MCP handler sets it from LiveSessionHeader).
func WithLiveSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, liveSessionKey{}, id)
}

// LiveSessionFrom is the live session id set by WithLiveSession, "" when none.
func LiveSessionFrom(ctx context.Context) string {
	id, _ := ctx.Value(liveSessionKey{}).(string)
	return id
}
