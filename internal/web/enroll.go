package web

import (
	"net/http"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// enrollResponse is the 201 body of POST /api/enroll (docs/agents.md, "Connect an agent").
type enrollResponse struct {
	Agent        relay.Agent         `json:"agent"`
	Token        string              `json:"token"`
	MCPURL       string              `json:"mcpUrl"`
	AssignedTask *relay.AssignedTask `json:"assignedTask,omitempty"`
	Setup        Setup               `json:"setup"`
	Next         []string            `json:"next"`
}

// serveEnroll lets an agent enroll itself with an invite code. It is public:
// the invite code is the credential.
//
// Each attempt spends one of the client's budget (given back when it
// succeeds), but for an invite code of the relay's own shape, which no
// guess finds (limiter.admit).
func (h *handler) serveEnroll(w http.ResponseWriter, r *http.Request) {
	var in relay.EnrollInput
	if !h.decodeBody(w, r, &in) {
		return
	}
	ok, charged := h.attempts.admit(w, r, strings.TrimSpace(in.Invite))
	if !ok {
		return
	}
	in, err := in.Validate()
	if err != nil {
		h.writeDomainError(w, r, "enroll", err)
		return
	}
	e, err := h.svc.Enroll(r.Context(), in)
	if err != nil {
		h.writeDomainError(w, r, "enroll", err)
		return
	}
	if charged {
		h.attempts.refund(clientAddr(r))
	}
	scheme := "http"
	if isSecure(r) {
		scheme = "https"
	}
	// r.Host passed the allow-list in checkHostOrigin.
	mcpURL := scheme + "://" + r.Host + "/mcp"
	if h.publicURL != "" {
		mcpURL = h.publicURL + "/mcp"
	}
	writeJSON(w, http.StatusCreated, enrollResponse{
		Agent:        e.Agent,
		Token:        e.Token,
		MCPURL:       mcpURL,
		AssignedTask: e.AssignedTask,
		Setup:        SetupFor(mcpURL, e.Token),
		Next:         EnrollNext(e),
	})
}
