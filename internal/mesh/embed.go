package mesh

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// embedAuth is who the embedded server lets in: one NKEY user per admitted
// relay, one password user per open invite (its secret stored as a bcrypt
// hash), and the relay's own privileged user, which only an in-process
// connection may use. nil lets anyone in (--nats-embed-open).
type embedAuth struct {
	nkeys []*server.NkeyUser
	users []*server.User
	// relays are the ids of the relays of nkeys: each has its consumer on
	// the stream made for it before it is let in (relayConsumers).
	relays []string
}

// adminUser is the embedding relay's own privileged user: it creates and
// keeps the stream and the directory bucket and answers admissions. Its
// password is made anew at each start and never leaves the process, and
// the server refuses it on any network connection.
const adminUser = "crosschat-admin"

// newAdminPassword returns a random password for adminUser.
func newAdminPassword() (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("mesh: embedded NATS admin password: %w", err)
	}
	return hex.EncodeToString(raw), nil
}

// adminOf is the privileged in-process user with password pass.
func adminOf(pass string) *server.User {
	return &server.User{Username: adminUser, Password: pass, AllowedConnectionTypes: map[string]struct{}{"IN_PROCESS": {}}}
}

// apply sets a's users on o (clearing them for nil: an open server).
func (a *embedAuth) apply(o *server.Options) {
	o.Nkeys, o.Users = nil, nil
	if a == nil {
		return
	}
	for _, u := range a.nkeys {
		c := *u
		o.Nkeys = append(o.Nkeys, &c)
	}
	for _, u := range a.users {
		c := *u
		o.Users = append(o.Users, &c)
	}
}

// startEmbedded runs a NATS server with JetStream in this process, listening
// on addr (HOST:PORT; port -1 picks a free one) and storing in dir, letting
// in whom auth names (anyone for nil). It returns the options it started
// with, which reloadEmbedded changes the users of.
func startEmbedded(addr, dir, name string, auth *embedAuth) (*server.Server, *server.Options, error) {
	host, portS, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("mesh: embedded NATS address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < -1 || port > 65535 {
		return nil, nil, fmt.Errorf("mesh: embedded NATS address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port > 0 {
		// NATS only logs a port it cannot bind and never becomes ready: say
		// so at once rather than after the 30 s wait below.
		ln, err := net.Listen("tcp", net.JoinHostPort(host, portS))
		if err != nil {
			return nil, nil, fmt.Errorf("mesh: embedded NATS address %s: %w", addr, err)
		}
		ln.Close()
	}
	opts := &server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		// The relay's own data folder is owner-only; JetStream keeps it so.
		MaxPayload: 8 << 20,
	}
	auth.apply(opts)
	srv, err := server.NewServer(opts.Clone())
	if err != nil {
		return nil, nil, fmt.Errorf("mesh: embedded NATS: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, nil, fmt.Errorf("mesh: embedded NATS on %s did not start", addr)
	}
	if port == -1 {
		// A reload compares the port with the one bound: keep the one chosen.
		if a, ok := srv.Addr().(*net.TCPAddr); ok {
			opts.Port = a.Port
		}
	}
	return srv, opts, nil
}

// reloadEmbedded gives the running server the users of auth: a user no
// longer named (a blocked relay, a used or expired invite) is disconnected
// at once, a new one may connect.
func reloadEmbedded(srv *server.Server, base *server.Options, auth *embedAuth) error {
	o := base.Clone()
	auth.apply(o)
	if err := srv.ReloadOptions(o); err != nil {
		return fmt.Errorf("mesh: embedded NATS: change its users: %w", err)
	}
	return nil
}
