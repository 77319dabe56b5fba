// Package loopback answers whether a host names this computer: the one
// check the configuration, the HTTP guards and the CLI client share.
package loopback

import (
	"net/netip"
	"strings"
)

// Host reports whether host names this computer: "localhost", a loopback
// IP address (127.0.0.0/8, ::1, ::ffff:127.0.0.1), IPv6 with or without
// brackets, any case, a trailing dot allowed. A port is not allowed.
func Host(host string) bool {
	h := Canonical(host)
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// Everywhere reports whether host is the every-address host (0.0.0.0, ::,
// or none), in any spelling Canonical reads: a relay listening there is
// reached on this computer's loopback.
func Everywhere(host string) bool {
	switch Canonical(host) {
	case "", "0.0.0.0", "::":
		return true
	}
	return false
}

// Canonical is host as Host reads it: trimmed, lower case, without a
// trailing dot or an IPv6 address's brackets ("LOCALHOST." is "localhost",
// "[::1]" is "::1").
func Canonical(host string) string {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}
