package mcp

import (
	"context"
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// ServeHTTP serves /mcp. A request from a live session's channel names the
// session in relay.LiveSessionHeader; for an agent's own token (not a
// worker run's, not the admin's: relay.NamesLiveSession) the id goes into
// the request's context, where post_task and claim_next_task find it
// (liveSession). The tools check it (an id of letters, digits and . _ : -).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(relay.LiveSessionHeader); id != "" {
		if p, ok := relay.PrincipalFrom(r.Context()); ok && relay.NamesLiveSession(p) {
			r = r.WithContext(relay.WithLiveSession(r.Context(), id))
		}
	}
	h.leanHandler.ServeHTTP(w, r)
}

// liveSession is the live session a tool call came through, "" for none.
func liveSession(ctx context.Context) string { return relay.LiveSessionFrom(ctx) }
