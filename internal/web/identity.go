package web

import (
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Identity challenge bounds: long enough to be unguessable, short enough
// to bound the work.
const (
	minChallengeLen = 32
	maxChallengeLen = 128
)

// validChallenge accepts [A-Za-z0-9_-]{32,128}.
func validChallenge(s string) bool {
	if len(s) < minChallengeLen || len(s) > maxChallengeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// serveIdentity answers GET /bridge/identity?challenge=… with
// {"proof": relay.IdentityProof(admin token, challenge)}. It needs no credential.
func (h *handler) serveIdentity(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	ch := r.URL.Query().Get("challenge")
	if !validChallenge(ch) {
		writeError(w, http.StatusBadRequest, "invalid_request", "challenge: must be 32–128 characters of A–Z, a–z, 0–9, _ and -.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"proof": relay.IdentityProof(h.adminToken, ch)})
}
