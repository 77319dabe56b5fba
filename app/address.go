package app

import (
	"net/url"
	"strings"
)

// The address an agent is told to use. Invite messages, setup snippets and
// token reveals name --public-url when it is set; else the origin the
// dashboard was reached at, which a browser passes to the methods that
// reveal one (Agents.CreateAt, Agents.RotateTokenAt, Invites.CreateAt,
// Overview.InfoAt); else (the native window, the command line, the methods
// without At) the relay's own address. An agent in a VM, a container, WSL or on the LAN
// thus gets an address that works from where the operator stands.

// reachedURL is the base URL to name to an agent, given the origin the
// caller reached the relay at ("" when not in a browser).
func (c *core) reachedURL(origin string) string {
	cfg := c.config()
	return cfg.AdvertisedURL(allowedOrigin(origin, cfg.AllowedOrigins))
}

// allowedOrigin returns origin in its plain form (scheme://host[:port]) when
// it is an http(s) origin whose host the relay accepts as an Origin (the
// allow-list the bridge already applied to the request), else "".
func allowedOrigin(origin string, allowed []string) string {
	if origin == "" || len(origin) > 300 {
		return ""
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" ||
		u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, a := range allowed {
		if strings.Trim(strings.ToLower(a), "[]") == host {
			return u.Scheme + "://" + strings.ToLower(u.Host)
		}
	}
	return ""
}
