package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// maxTokenLen bounds a bearer token we bother to look up.
const maxTokenLen = 1000

// CORS headers for /mcp.
const (
	mcpAllowHeaders = "authorization, content-type, mcp-protocol-version, mcp-session-id"
	mcpAllowMethods = "GET, POST, DELETE, OPTIONS"
)

// The values of the headers every /mcp answer carries, shared by all
// answers: Header.Set makes a new slice for each value of each answer. A
// header is only ever replaced or added to, never changed in place, and an
// Add to a slice without room copies it.
var (
	noStoreValue = []string{"no-store"}
	nosniffValue = []string{"nosniff"}
)

// unauthorizedMCP is the 401 body of /mcp without a valid bearer token.
var unauthorizedMCP = errorBody{Error: relay.EUnauthorized, Message: "Send Authorization: Bearer <admin token or per-agent token>."}

// serveMCP guards /mcp (Host, Origin, bearer), puts the principal in the
// request context and hands over to the MCP handler.
func (h *handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr["Cache-Control"] = noStoreValue
	hdr["X-Content-Type-Options"] = nosniffValue

	_, originPresent, originOK, _ := h.originAllowed(r)
	if originPresent && originOK {
		hdr.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		hdr.Set("Access-Control-Allow-Headers", mcpAllowHeaders)
		hdr.Set("Access-Control-Allow-Methods", mcpAllowMethods)
		hdr.Add("Vary", "Origin")
	}

	if r.Method == http.MethodOptions {
		if !originOK {
			writeError(w, http.StatusForbidden, "origin_not_allowed", "")
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}

	if name, ok, malformed := h.hostAllowed(r); !ok {
		switch {
		case r.Host == "":
			writeJSONRPCError(w, "Missing Host header")
		case malformed:
			writeJSONRPCError(w, "Invalid Host header: "+r.Host)
		default:
			writeJSONRPCError(w, "Invalid Host: "+name)
		}
		return
	}
	if name, _, ok, malformed := h.originAllowed(r); !ok {
		if malformed {
			writeJSONRPCError(w, "Invalid Origin header: "+r.Header.Get("Origin"))
		} else {
			writeJSONRPCError(w, "Invalid Origin: "+name)
		}
		return
	}

	p, ok := h.authenticateBearer(w, r, "mcp auth")
	if !ok {
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		body, err := h.readBody(w, r)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				writeJSONRPCErrorStatus(w, http.StatusRequestEntityTooLarge, -32600,
					fmt.Sprintf("Request body too large: the limit is %d bytes.", h.maxBody))
				return
			}
			if errors.Is(err, errBodyTimeout) {
				w.Header().Set("Connection", "close")
				writeJSONRPCErrorStatus(w, http.StatusRequestTimeout, -32600, "The request body did not arrive in time.")
				return
			}
			writeJSONRPCErrorStatus(w, http.StatusBadRequest, -32700, "The request body could not be read.")
			return
		}
		// The MCP handler gets the bounded body as it was read: whole
		// (Bytes, for its lean path) or as a reader (for mcp-go).
		r.Body = &wholeBody{Reader: bytes.NewReader(body), b: body}
		r.ContentLength = int64(len(body))
	}
	h.mcp.ServeHTTP(w, r.WithContext(relay.WithPrincipal(r.Context(), p)))
}

// wholeBody is a request body read whole: a reader over it, and Bytes for a
// handler that wants it whole without a copy (internal/mcp's ReadBody).
type wholeBody struct {
	*bytes.Reader
	b []byte
}

// Close does nothing: the body is in memory.
func (r *wholeBody) Close() error { return nil }

// Bytes returns the whole body.
func (r *wholeBody) Bytes() []byte { return r.b }

// authenticate resolves the bearer token: the admin token (constant time),
// else an agent or run token through the service. A missing or unknown
// token is an unauthorized *relay.Error.
func (h *handler) authenticate(r *http.Request) (relay.Principal, error) {
	tok := bearerToken(r)
	if tok == "" || len(tok) > maxTokenLen {
		if v := r.Header.Get("Authorization"); v != "" {
			h.attempts.failToken(r, v)
		}
		return relay.Principal{}, relay.Errorf(relay.EUnauthorized, "%s", unauthorizedMCP.Message)
	}
	if relay.TokensEqual(tok, h.adminToken) {
		h.attempts.worked(r, tok)
		return relay.Admin, nil
	}
	p, err := h.svc.Authenticate(r.Context(), tok)
	if err != nil {
		if relay.ErrorCode(err) == relay.EUnauthorized {
			h.attempts.failToken(r, tok)
		}
		return relay.Principal{}, err
	}
	h.attempts.worked(r, tok)
	return p, nil
}

// writeJSONRPCError writes the 403 JSON-RPC error the MCP SDK uses for
// failed Host and Origin checks.
func writeJSONRPCError(w http.ResponseWriter, message string) {
	writeJSONRPCErrorStatus(w, http.StatusForbidden, -32000, message)
}

// writeJSONRPCErrorStatus writes a JSON-RPC error object (id null) with an
// HTTP status.
func writeJSONRPCErrorStatus(w http.ResponseWriter, status, code int, message string) {
	type rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   rpcErr          `json:"error"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", rpcErr{code, message}, json.RawMessage("null")})
	writeRawJSON(w, status, b)
}

// authenticateBearer authenticates r for the token-only endpoints (/mcp,
// the push stream). A missing or bad token gets 401 with a Bearer challenge
// and the JSON-RPC style body; another failure its domain error (op names
// it in the log). ok is false when an answer was written.
func (h *handler) authenticateBearer(w http.ResponseWriter, r *http.Request, op string) (p relay.Principal, ok bool) {
	p, err := h.authenticate(r)
	if err == nil {
		return p, true
	}
	if relay.ErrorCode(err) == relay.EUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="crosschat-relay"`)
		writeJSON(w, http.StatusUnauthorized, unauthorizedMCP)
		return p, false
	}
	h.writeDomainError(w, r, op, err)
	return p, false
}
