package web

import (
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// MetricsPath is where Prometheus scrapes the relay.
const MetricsPath = "/metrics"

// serveMetrics guards GET /metrics: with the admin bearer token from
// anywhere (a Prometheus server elsewhere, whatever Host it uses), or with
// no token only from this computer (loopback, not proxied) and through the
// Host and Origin allow-lists, so a web page cannot read it by DNS
// rebinding. Any other request gets 401; a wrong token gets 401 even from
// loopback.
func (h *handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if h.metrics == nil {
		writeError(w, http.StatusNotFound, "not_found", "Nothing is served here.")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	switch tok := bearerToken(r); {
	case tok != "":
		if len(tok) > maxTokenLen || !relay.TokensEqual(tok, h.adminToken) {
			h.attempts.failToken(r, tok)
			h.refuseMetrics(w)
			return
		}
		h.attempts.worked(r, tok)
	case isLocalRequest(r):
		if !h.checkHostOrigin(w, r) {
			return
		}
	default:
		h.refuseMetrics(w)
		return
	}
	h.metrics.ServeHTTP(w, r)
}

func (h *handler) refuseMetrics(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="crosschat-relay"`)
	writeError(w, http.StatusUnauthorized, relay.EUnauthorized, "Send Authorization: Bearer <admin token>, or scrape from this computer.")
}
