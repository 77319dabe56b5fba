package mesh

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// NATSAccount is the account `mesh nats-config` puts the relays in.
const NATSAccount = "CROSSCHAT"

// NATSConfig is what an external NATS cluster needs to admit the relays
// this one knows, each as its own user confined to its own subjects: this
// relay and every relay it trusts, none it blocked.
type NATSConfig struct {
	Account string     `json:"account"`
	Users   []NATSUser `json:"users"`
	// Text is the same as a block of nats-server configuration.
	Text string `json:"text"`
}

// NATSUser is one relay's NATS user.
type NATSUser struct {
	RelayID     string   `json:"relayId"`
	Name        string   `json:"name"`
	Self        bool     `json:"self"`
	NKey        string   `json:"nkey"`
	Fingerprint string   `json:"fingerprint"`
	Publish     []string `json:"publish"`
	PublishDeny []string `json:"publishDeny"`
	Subscribe   []string `json:"subscribe"`
	// Config is the user's entry of the server configuration, one line, to
	// add to an account's users.
	Config string `json:"config"`
}

// NATSConfig returns the users to install on an external cluster.
func (n *Node) NATSConfig(ctx context.Context) (NATSConfig, error) {
	records, err := n.opts.Store.MeshRelays(ctx)
	if err != nil {
		return NATSConfig{}, fmt.Errorf("read relay admissions: %w", err)
	}
	users := []NATSUser{natsUser(n.id.ID, n.id.Name, n.id.PublicKey, true)}
	var blocked []string
	for _, r := range records {
		switch {
		case r.ID == n.id.ID || r.PublicKey == "":
		case r.State == relay.RelayTrusted:
			users = append(users, natsUser(r.ID, r.Name, r.PublicKey, false))
		case r.State == relay.RelayBlocked:
			blocked = append(blocked, r.Name+" ("+r.ID+")")
		}
	}
	sort.SliceStable(users[1:], func(i, j int) bool { return users[1+i].Name < users[1+j].Name })
	c := NATSConfig{Account: NATSAccount, Users: users}
	c.Text = natsConfigText(n.id, users, blocked)
	return c, nil
}

// natsUser is the user of relay id with the base64 key pub.
func natsUser(id, name, pub string, self bool) NATSUser {
	k, _ := nkeyOf(pub) // keys pinned by the store are Ed25519 keys
	g := relayGrant(id, true)
	u := NATSUser{RelayID: id, Name: name, Self: self, NKey: k, Fingerprint: Fingerprint(pub), Publish: g.Publish, PublishDeny: g.PublishDeny, Subscribe: g.Subscribe}
	u.Config = fmt.Sprintf("{nkey: %s, permissions: {publish: {allow: %s, deny: %s}, subscribe: {allow: %s}}}",
		strconv.Quote(k), confList(g.Publish), confList(g.PublishDeny), confList(g.Subscribe))
	return u
}

// confList writes subjects as a configuration list of quoted strings.
func confList(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// natsConfigText is the configuration block of users, written on relay self.
func natsConfigText(self Identity, users []NATSUser, blocked []string) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Crosschat Relay mesh: one NATS user per relay, written by relay %s (%s).\n", commentSafe(self.Name), self.ID)
	w("# Each relay connects with its own key (no credential flag) and may use only its own\n")
	w("# subjects: write its directory entries, publish to any relay's inbox, consume its own\n")
	w("# subject through its own consumer. None may delete, purge or update the stream, the\n")
	w("# consumers or the directory; the first relay to connect creates the stream %s\n", StreamName)
	w("# and the bucket %s as they must be. Include this file in nats-server's\n", BucketName)
	w("# configuration (with jetstream enabled) and reload it: nats-server --signal reload.\n")
	if len(blocked) > 0 {
		w("# Left out, as blocked here: %s.\n", commentSafe(strings.Join(blocked, ", ")))
	}
	w("accounts {\n  %s: {\n    jetstream: enabled\n    users: [\n", NATSAccount)
	for _, u := range users {
		me := ""
		if u.Self {
			me = ", this relay"
		}
		w("      # %s (%s), key %s%s\n", commentSafe(u.Name), u.RelayID, u.Fingerprint, me)
		w("      %s\n", u.Config)
	}
	w("    ]\n  }\n}\n")
	return b.String()
}

// commentSafe keeps a relay name on its comment line.
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
}
