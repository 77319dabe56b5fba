package web

import (
	"net/http"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Which tokens a spent budget still lets through. The budget exists for
// guessing: it bounds how many wrong tokens one client may have looked at,
// so a short secret (an admin token of the operator's own choosing, which
// may be 24 characters) is not found by trying. Refusing every token once
// it is spent, the right one too, keeps a right guess from being told
// apart, but it lets any process on this computer (a sandboxed run
// included) lock every agent, run and CLI verb out by sending wrong
// tokens. So a spent budget refuses, before looking at it, only a token
// that could be a guess:
//
//   - a token of one of the relay's own shapes, each 256 or 192 random
//     bits (unguessable), is always looked at: no number of tries finds
//     one, so the answer tells a guesser nothing, and a wrong one spends
//     nothing;
//   - a token that authenticated from the same client before (goodTokens:
//     the operator's chosen admin token, once it worked) is looked at: it
//     is no guess, and a guesser cannot send it without knowing it.
//
// Everything else waits for the budget, as before.

// unguessable reports whether tok has the shape of a secret the relay
// makes itself, too random for any number of tries to find: an agent or
// run token (cca_ or ccr_ and 43 base64url characters, 256 bits), an
// invite code (cci_ and 32, 192 bits) or the relay's generated admin token
// (43, 256 bits). An admin token the operator chose in that very shape is
// taken to be as random.
func unguessable(tok string) bool {
	body, n := tok, 43
	switch {
	case strings.HasPrefix(tok, relay.AgentTokenPrefix), strings.HasPrefix(tok, relay.RunTokenPrefix):
		body = tok[len(relay.AgentTokenPrefix):]
	case strings.HasPrefix(tok, relay.InviteCodePrefix):
		body, n = tok[len(relay.InviteCodePrefix):], 32
	}
	if len(body) != n {
		return false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// mayTry reports whether tok, sent by r's client, is looked at although
// the client's budget is spent: an unguessable shape, or a token that
// worked from this client before (marked sent now).
func (l *limiter) mayTry(r *http.Request, tok string) bool {
	if unguessable(tok) {
		return true
	}
	if l.cfg.Burst < 0 || tok == "" || len(tok) > maxTokenLen {
		return false
	}
	fp := fingerprintOf(tok)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[clientAddr(r)]
	return b != nil && touch(b.good, fp, now)
}

// worked records that tok authenticated from r's client (nothing for an
// unguessable shape, which needs no memory): while the client's budget is
// spent, tok is still looked at.
func (l *limiter) worked(r *http.Request, tok string) {
	if l.cfg.Burst < 0 || unguessable(tok) || len(tok) > maxTokenLen {
		return
	}
	fp := fingerprintOf(tok)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucketLocked(clientAddr(r), now)
	if b == nil || touch(b.good, fp, now) {
		return
	}
	b.good = rememberIn(b.good, maxGoodTokens, fp, now)
}

// admit spends an attempt of r's client for secret, sent in a body
// (sign-in's admin token, an invite code), or none when it may be tried
// without (mayTry) once the budget is spent; otherwise it answers 429
// itself. charged tells whether an attempt was spent, for the caller to
// refund on success.
func (l *limiter) admit(w http.ResponseWriter, r *http.Request, secret string) (ok, charged bool) {
	if spent, wait := l.spent(clientAddr(r)); spent {
		if l.mayTry(r, secret) {
			return true, false
		}
		writeLimited(w, wait)
		return false, false
	}
	if unguessable(secret) {
		return true, false
	}
	return l.allow(w, r), true
}
