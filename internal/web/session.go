package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Session cookie parameters (§5.4).
const (
	sessionCookie = "crosschat_session"
	sessionMaxAge = 7 * 24 * time.Hour
	// csrfHeader must accompany cookie-authenticated writes.
	csrfHeader = "X-Crosschat-Request"
)

// sessionState is the body of the session endpoints.
type sessionState struct {
	Authenticated bool   `json:"authenticated"`
	Version       string `json:"version,omitempty"`
}

// signSession returns the signature of a cookie that expires at expiresMs.
func (h *handler) signSession(expiresMs int64) string {
	mac := hmac.New(sha256.New, []byte(h.adminToken))
	mac.Write([]byte("session:" + strconv.FormatInt(expiresMs, 10)))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// validSession reports whether value is an unexpired cookie value signed
// with the admin token.
func (h *handler) validSession(value string) bool {
	exp, sig, ok := strings.Cut(value, ".")
	if !ok || exp == "" || len(exp) > 19 {
		return false
	}
	ms, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || ms < h.now().UnixMilli() {
		return false
	}
	want := h.signSession(ms)
	// hmac.Equal is constant-time for equal lengths, and the length of a
	// valid signature is public.
	return hmac.Equal([]byte(sig), []byte(want)) && strconv.FormatInt(ms, 10) == exp
}

// hasSession reports whether any crosschat_session cookie on r is valid.
func (h *handler) hasSession(r *http.Request) bool {
	for _, c := range r.Cookies() {
		if c.Name == sessionCookie && h.validSession(c.Value) {
			return true
		}
	}
	return false
}

// adminAuth tells how r authenticates as the admin: by bearer token, by
// session cookie only, or not at all.
func (h *handler) adminAuth(r *http.Request) (ok, byBearer bool) {
	if tok := bearerToken(r); tok != "" && relay.TokensEqual(tok, h.adminToken) {
		return true, true
	}
	return h.hasSession(r), false
}

// requireAdmin checks admin auth and, for cookie-only writes, the CSRF
// header. It answers the request itself and returns false on failure.
func (h *handler) requireAdmin(w http.ResponseWriter, r *http.Request) bool {
	ok, byBearer := h.adminAuth(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, relay.EUnauthorized, "Sign in with the admin token.")
		return false
	}
	if !byBearer && r.Method != http.MethodGet && r.Method != http.MethodHead {
		if _, has := r.Header[http.CanonicalHeaderKey(csrfHeader)]; !has {
			writeError(w, http.StatusForbidden, "csrf_check_failed", "Send the "+csrfHeader+" header with every change.")
			return false
		}
	}
	return true
}

// serveSession serves GET (state), POST (sign in) and DELETE (sign out)
// on /bridge/session.
func (h *handler) serveSession(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		ok, _ := h.adminAuth(r)
		writeJSON(w, http.StatusOK, sessionState{Authenticated: ok, Version: h.version})
	case http.MethodPost:
		h.signIn(w, r)
	case http.MethodDelete:
		if !h.requireAdmin(w, r) {
			return
		}
		http.SetCookie(w, &http.Cookie{
			Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: isSecure(r),
		})
		writeJSON(w, http.StatusOK, sessionState{Authenticated: false})
	default:
		methodNotAllowed(w, "GET, POST, DELETE")
	}
}

// signIn checks {token} against the admin token and sets the session cookie.
func (h *handler) signIn(w http.ResponseWriter, r *http.Request) {
	if !h.attempts.allow(w, r) {
		return
	}
	var in struct {
		Token string `json:"token"`
	}
	if !h.decodeBody(w, r, &in) {
		return
	}
	tok := strings.TrimSpace(in.Token)
	if tok == "" || len(tok) > maxTokenLen {
		writeError(w, http.StatusBadRequest, relay.EInvalidRequest, "token: must be 1–1000 characters.")
		return
	}
	if !relay.TokensEqual(tok, h.adminToken) {
		writeError(w, http.StatusUnauthorized, "invalid_token", "That is not the admin token.")
		return
	}
	h.attempts.refund(clientAddr(r))
	expires := h.now().Add(sessionMaxAge).UnixMilli()
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    strconv.FormatInt(expires, 10) + "." + h.signSession(expires),
		Path:     "/",
		MaxAge:   int(sessionMaxAge / time.Second),
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   isSecure(r),
	})
	writeJSON(w, http.StatusOK, sessionState{Authenticated: true, Version: h.version})
}
