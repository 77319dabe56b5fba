package mesh

import (
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/loopback"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Invite is what another computer needs to join this relay's mesh.
type Invite struct {
	// URL is the NATS URL to give --nats. For an embedded server it carries
	// a single-use invite (as the password of the user "crosschat"), never
	// a password of the server: the invited relay presents its own key
	// with it once, and connects with that key from then on.
	URL string `json:"url"`
	// Command is the exact command to run on the other computer.
	Command string `json:"command"`
	// Env is the same as an environment variable (it keeps the invite
	// out of the process list).
	Env string `json:"env"`
	// ExpiresAt is when the invite can no longer be used ("" without one).
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Files are credential files to copy to the other computer, named by
	// the flag that takes them.
	Files map[string]string `json:"files,omitempty"`
	// Note says what the invite does not cover.
	Note string `json:"note,omitempty"`
}

// InviteURL is a new invite's URL (see Invite), "" without an embedded
// server or when the invite cannot be made.
func (n *Node) InviteURL() string {
	inv, err := n.Invite()
	if err != nil || n.srv == nil {
		return ""
	}
	return inv.URL
}

// embedURL is the URL other computers reach the embedded server at.
func (n *Node) embedURL() url.URL {
	host, _, _ := net.SplitHostPort(n.opts.Embed)
	port := 0
	if a, ok := n.srv.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	if loopback.Everywhere(host) {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	return url.URL{Scheme: "nats", Host: net.JoinHostPort(host, strconv.Itoa(port))}
}

// Invite returns the command another computer runs to join this mesh. With
// an embedded server it makes a new invite, valid for one relay until
// DefaultInviteTTL passes; otherwise it names the NATS URLs and the
// credential files this relay uses.
func (n *Node) Invite() (Invite, error) {
	var inv Invite
	switch {
	case n.srv != nil && n.adm != nil:
		t, expires, err := n.adm.newInvite(n.now(), DefaultInviteTTL)
		if err != nil {
			return Invite{}, err
		}
		if err := n.readmit(n.ctx); err != nil {
			return Invite{}, err
		}
		u := n.embedURL()
		u.User = url.UserPassword(embedURLUser, t.String())
		inv.URL, inv.ExpiresAt = u.String(), relay.FormatTime(expires)
	case n.srv != nil:
		u := n.embedURL()
		inv.URL = u.String()
	default:
		inv.URL = strings.Join(n.urls, ",")
		inv.Files = map[string]string{}
		for flag, f := range map[string]string{"--nats-creds": n.opts.CredsFile, "--nats-nkey": n.opts.NKeyFile, "--nats-tls-ca": n.opts.TLSCAFile} {
			if f != "" {
				inv.Files[flag] = f
			}
		}
		if len(inv.Files) == 0 {
			inv.Files = nil
		}
	}
	args := []string{"crosschat-relay", "serve", "--nats", shellQuote(inv.URL)}
	for _, flag := range []string{"--nats-creds", "--nats-nkey", "--nats-tls-ca"} {
		if f, ok := inv.Files[flag]; ok {
			args = append(args, flag, shellQuote(f))
		}
	}
	inv.Command = strings.Join(args, " ")
	inv.Env = "CROSSCHAT_NATS=" + shellQuote(inv.URL)
	trust := "Then, on each side, `crosschat-relay mesh relays` shows the other relay as pending with its key fingerprint: " +
		"compare the fingerprints and run `crosschat-relay mesh trust NAME`."
	switch {
	case n.srv != nil && n.adm != nil:
		inv.Note = "The invite lets one relay in, once, until it expires; it holds no password of the NATS server. " +
			"That relay then connects with its own key and may use only its own subjects. " + trust
	case n.srv != nil:
		inv.Note = "The embedded server is open (--nats-embed-open): anyone who can reach it may join, with every permission. " + trust
	default:
		inv.Note = "The NATS cluster decides who connects: give the other relay its own user (`crosschat-relay mesh nats-config` on it prints its entry). " + trust
	}
	return inv, nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@,=+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
