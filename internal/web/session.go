package web

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Browser sessions. A sign-in returns a random session value that the
// dashboard keeps in its origin's sessionStorage and sends back in the
// X-Crosschat-Session header. No cookie is set: browsers send cookies to
// every port of a host, so any other local web server (a dev server, an
// agent's preview) would receive a cookie and could replay it; a header
// value never leaves the origin that holds it. The relay keeps only a hash
// of each value, in memory: sign-out revokes it, a restart (for example
// with a rotated admin token) revokes them all, and each lives at most
// sessionLifetime. The change stream, which EventSource cannot send
// headers to, is opened with a one-time ticket.
const (
	// SessionHeader carries the session value.
	SessionHeader = "X-Crosschat-Session"
	// sessionLifetime bounds a session, however active.
	sessionLifetime = 12 * time.Hour
	// ticketLifetime bounds an unused change-stream ticket.
	ticketLifetime = 30 * time.Second
	// maxSessions bounds the session (and ticket) table; the oldest go first.
	maxSessions = 1000
)

// sessionState is the body of the session endpoints.
type sessionState struct {
	Authenticated bool   `json:"authenticated"`
	Version       string `json:"version,omitempty"`
	// Session is the new session value (sign-in only).
	Session string `json:"session,omitempty"`
}

// secretSet is a bounded set of hashed random values with expiry times.
type secretSet struct {
	mu      sync.Mutex
	expires map[string]time.Time // relay.HashToken(value) → expiry
}

func newSecretSet() *secretSet { return &secretSet{expires: map[string]time.Time{}} }

// issue returns a new random value that is valid until now+life.
func (s *secretSet) issue(now time.Time, life time.Duration) string {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	v := base64.RawURLEncoding.EncodeToString(raw[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.expires) >= maxSessions {
		oldestKey, oldest := "", time.Time{}
		for k, exp := range s.expires {
			if !exp.After(now) {
				delete(s.expires, k)
				continue
			}
			if oldestKey == "" || exp.Before(oldest) {
				oldestKey, oldest = k, exp
			}
		}
		if len(s.expires) >= maxSessions {
			delete(s.expires, oldestKey)
		}
	}
	s.expires[relay.HashToken(v)] = now.Add(life)
	return v
}

// valid reports whether v was issued, is unexpired and not revoked; consume
// revokes it in the same step (one-time tickets).
func (s *secretSet) valid(v string, now time.Time, consume bool) bool {
	if v == "" || len(v) > maxTokenLen {
		return false
	}
	k := relay.HashToken(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.expires[k]
	if !ok {
		return false
	}
	if !exp.After(now) || consume {
		delete(s.expires, k)
	}
	return exp.After(now)
}

// revoke forgets v.
func (s *secretSet) revoke(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.expires, relay.HashToken(v))
}

// adminAuth tells whether r authenticates as the admin: by bearer token or
// by a session header.
// A wrong bearer token spends an attempt of the client's address the first
// time the address sends it (see limiter.failToken); a wrong session value
// spends none (it is 256 random bits: an old one is not a guess).
func (h *handler) adminAuth(r *http.Request) bool {
	if tok := bearerToken(r); tok != "" {
		if relay.TokensEqual(tok, h.adminToken) {
			h.attempts.worked(r, tok)
			return true
		}
		h.attempts.failToken(r, tok)
	}
	return h.sessions.valid(strings.TrimSpace(r.Header.Get(SessionHeader)), h.now(), false)
}

// requireAdmin checks admin auth. It answers the request itself and
// returns false on failure. No cookie authenticates, so there is no
// cross-site request to forge.
func (h *handler) requireAdmin(w http.ResponseWriter, r *http.Request) bool {
	if !h.adminAuth(r) {
		writeError(w, http.StatusUnauthorized, relay.EUnauthorized, "Sign in with the admin token.")
		return false
	}
	return true
}

// serveSession serves GET (state), POST (sign in) and DELETE (sign out)
// on /bridge/session.
func (h *handler) serveSession(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		writeJSON(w, http.StatusOK, sessionState{Authenticated: h.adminAuth(r), Version: h.version})
	case http.MethodPost:
		h.signIn(w, r)
	case http.MethodDelete:
		if !h.requireAdmin(w, r) {
			return
		}
		h.sessions.revoke(strings.TrimSpace(r.Header.Get(SessionHeader)))
		writeJSON(w, http.StatusOK, sessionState{Authenticated: false})
	default:
		methodNotAllowed(w, "GET, POST, DELETE")
	}
}

// signIn checks {token} against the admin token and answers a new session.
//
// Each attempt spends one of the client's budget (given back when it
// succeeds), but for a token that could not be a guess (limiter.admit).
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token string `json:"token"`
	}
	if !h.decodeBody(w, r, &in) {
		return
	}
	tok := strings.TrimSpace(in.Token)
	ok, charged := h.attempts.admit(w, r, tok)
	if !ok {
		return
	}
	if tok == "" || len(tok) > maxTokenLen {
		writeError(w, http.StatusBadRequest, relay.EInvalidRequest, "token: must be 1–1000 characters.")
		return
	}
	if !relay.TokensEqual(tok, h.adminToken) {
		writeError(w, http.StatusUnauthorized, "invalid_token", "That is not the admin token.")
		return
	}
	if charged {
		h.attempts.refund(clientAddr(r))
	}
	h.attempts.worked(r, tok)
	writeJSON(w, http.StatusOK, sessionState{Authenticated: true, Version: h.version, Session: h.sessions.issue(h.now(), sessionLifetime)})
}

// serveTicket answers POST /bridge/events/ticket with a one-time ticket
// for GET /bridge/events?ticket=…, valid for ticketLifetime.
func (h *handler) serveTicket(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	if !h.requireAdmin(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"ticket": h.tickets.issue(h.now(), ticketLifetime)})
}
