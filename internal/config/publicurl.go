package config

import (
	"fmt"
	"net/url"
	"strings"
)

// NormalizePublicURL checks a --public-url value and returns it without a
// trailing slash: an http or https URL with a host, no user, query or
// fragment. A path is kept (a relay behind a proxy under /crosschat).
// An empty value stays empty (not set).
func NormalizePublicURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("--public-url %q: must be an http or https URL with a host, like https://relay.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("--public-url %q: must not hold a user, query or fragment", raw)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/"), nil
}

// AdvertisedURL is the base URL to name to agents that are told about this
// relay by someone who reached it at reached ("" when unknown, e.g. the
// native window or the command line): --public-url when set, else reached,
// else BaseURL.
func (c Config) AdvertisedURL(reached string) string {
	switch {
	case c.PublicURL != "":
		return c.PublicURL
	case reached != "":
		return reached
	default:
		return c.BaseURL()
	}
}
