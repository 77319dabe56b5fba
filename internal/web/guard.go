package web

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// DefaultAllowedHosts are the hostnames accepted when the relay listens on
// loopback: localhost, 127.0.0.1 and [::1].
func DefaultAllowedHosts() []string {
	return []string{"localhost", "127.0.0.1", "[::1]"}
}

// normalizeHostname lowercases a configured hostname and strips IPv6
// brackets and a trailing dot; it returns "" when raw is not a hostname.
func normalizeHostname(raw string) string {
	h := strings.ToLower(strings.TrimSpace(raw))
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	h = strings.TrimSuffix(h, ".")
	if !validHostname(h) {
		return ""
	}
	return h
}

// validHostname accepts DNS names, IPv4 and IPv6 addresses (no brackets).
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if strings.Contains(h, ":") {
		_, err := netip.ParseAddr(h)
		return err == nil
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return true
}

// hostnameOf extracts the lowercased hostname of a Host header value
// ("host", "host:port", "[v6]", "[v6]:port"). It reports false for anything
// malformed.
func hostnameOf(hostport string) (string, bool) {
	if hostport == "" {
		return "", false
	}
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return "", false
		}
		host, port = hostport[1:end], hostport[end+1:]
		if port != "" {
			if port[0] != ':' {
				return "", false
			}
			port = port[1:]
		}
		if !strings.Contains(host, ":") {
			return "", false
		}
	} else if i := strings.LastIndexByte(hostport, ':'); i >= 0 {
		host, port = hostport[:i], hostport[i+1:]
		if strings.Contains(host, ":") {
			return "", false
		}
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return "", false
		}
	}
	if len(port) > 5 {
		return "", false
	}
	n := normalizeHostname(host)
	return n, n != ""
}

// originHostname extracts the hostname of an Origin header. Only http and
// https origins qualify; "null" and anything unparseable report false.
func originHostname(origin string) (string, bool) {
	if origin == "" || origin == "null" {
		return "", false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Opaque != "" || u.User != nil {
		return "", false
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	return hostnameOf(u.Host)
}

// hostAllowed reports whether the request's Host is on the allow-list, and
// the hostname it found (for messages).
func (h *handler) hostAllowed(r *http.Request) (hostname string, ok, malformed bool) {
	name, valid := hostnameOf(r.Host)
	if !valid {
		return "", false, true
	}
	return name, h.allowedHosts[name], false
}

// originAllowed reports whether the Origin header is absent or on the
// allow-list, and the hostname it found (for messages).
func (h *handler) originAllowed(r *http.Request) (hostname string, present, ok, malformed bool) {
	vals, present := r.Header["Origin"]
	if !present {
		return "", false, true, false
	}
	if len(vals) != 1 {
		return "", true, false, true
	}
	name, valid := originHostname(vals[0])
	if !valid {
		return "", true, false, true
	}
	return name, true, h.allowedOrigins[name], false
}

// checkHostOrigin applies the Host and Origin allow-lists to every route
// except /health and /mcp, answering 403 itself when one fails.
func (h *handler) checkHostOrigin(w http.ResponseWriter, r *http.Request) bool {
	if _, ok, _ := h.hostAllowed(r); !ok {
		writeError(w, http.StatusForbidden, "host_not_allowed", "This host name is not allowed; add it to the relay's allowed hosts.")
		return false
	}
	if _, _, ok, _ := h.originAllowed(r); !ok {
		writeError(w, http.StatusForbidden, "origin_not_allowed", "This origin is not allowed; add it to the relay's allowed origins.")
		return false
	}
	return true
}

// proxyHeaders are the headers a reverse proxy adds; a request carrying
// any of them came from somewhere else, whatever the peer address says.
var proxyHeaders = []string{"X-Forwarded-For", "Forwarded", "X-Real-Ip", "Via", "X-Forwarded-Host"}

// isLocalRequest reports whether r came straight from this computer: a
// loopback peer address (127.0.0.1, ::1 or ::ffff:127.0.0.1) and no proxy
// headers.
func isLocalRequest(r *http.Request) bool {
	for _, h := range proxyHeaders {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	return a.Unmap() == netip.MustParseAddr("127.0.0.1") || a == netip.IPv6Loopback()
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header (scheme case-insensitive, value trimmed), or "".
func bearerToken(r *http.Request) string {
	v := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok {
		scheme, rest, ok = strings.Cut(v, "\t")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(rest)
}
