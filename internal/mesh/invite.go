package mesh

import (
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Invite is what another computer needs to join this relay's mesh.
type Invite struct {
	// URL is the NATS URL to give --nats, with the embedded server's
	// credential in it when there is one.
	URL string `json:"url"`
	// Command is the exact command to run on the other computer.
	Command string `json:"command"`
	// Env is the same as an environment variable (it keeps the credential
	// out of the process list).
	Env string `json:"env"`
	// Files are credential files to copy to the other computer, named by
	// the flag that takes them.
	Files map[string]string `json:"files,omitempty"`
	// Note says what the invite does not cover.
	Note string `json:"note,omitempty"`
}

// InviteURL is the URL another relay (or a test) joins the embedded server
// with, credential included; "" without an embedded server.
func (n *Node) InviteURL() string {
	if n.srv == nil {
		return ""
	}
	host, _, _ := net.SplitHostPort(n.opts.Embed)
	port := 0
	if a, ok := n.srv.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		} else {
			host = "127.0.0.1"
		}
	}
	u := url.URL{Scheme: "nats", Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if n.embedCred.User != "" {
		u.User = url.UserPassword(n.embedCred.User, n.embedCred.Password)
	}
	return u.String()
}

// Invite returns the command another computer runs to join this mesh: the
// embedded server's URL and credential, or the NATS URLs and credential
// files this relay uses.
func (n *Node) Invite() Invite {
	var inv Invite
	if u := n.InviteURL(); u != "" {
		inv.URL = u
	} else {
		inv.URL = strings.Join(n.opts.URLs, ",")
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
	inv.Note = "Then, on each side, `crosschat-relay mesh relays` shows the other relay as pending with its key fingerprint: " +
		"compare the fingerprints and run `crosschat-relay mesh trust NAME`."
	if n.srv != nil && n.opts.EmbedOpen {
		inv.Note = "The embedded server is open (--nats-embed-open): anyone who can reach it may join. " + inv.Note
	}
	return inv
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
