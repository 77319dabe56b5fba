package mesh

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// embed starts the embedded server: with the users of the admissions
// (this relay, the relays invited or trusted, open invites, the in-process
// admin), or open to anyone with --nats-embed-open; then the privileged
// in-process connection, which answers invited relays.
func (n *Node) embed() error {
	var auth *embedAuth
	pass := ""
	if !n.opts.EmbedOpen {
		adm, err := loadAdmissions(n.opts.DataDir)
		if err != nil {
			return err
		}
		if pass, err = newAdminPassword(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
		records, err := n.opts.Store.MeshRelays(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("mesh: read relay admissions: %w", err)
		}
		adm.mu.Lock()
		adm.pruneLocked(n.now())
		auth = adm.authLocked(n.id, records, pass, n.now())
		adm.applied = auth.fingerprint()
		adm.mu.Unlock()
		n.adm, n.adminPass = adm, pass
	} else {
		n.log.Warn("mesh: --nats-embed-open: the embedded NATS server lets ANYONE who can reach " + n.opts.Embed +
			" in with every permission: they can read every task, write any relay's directory entries, and delete or purge " +
			"the stream, the consumers and the directory, losing every relay's messages; only the relays' signatures still " +
			"decide what is applied. Use it on a network that is yours alone, or leave it off.")
	}
	srv, sopts, err := startEmbedded(n.opts.Embed, filepath.Join(n.opts.DataDir, "nats"), "crosschat-"+n.id.ID, auth)
	if err != nil {
		return err
	}
	n.srv, n.srvOpts = srv, sopts
	aopts := []nats.Option{nats.Name("crosschat-relay " + n.id.Name + " (embedded server admin)"), nats.InProcessServer(srv), nats.MaxReconnects(-1)}
	if pass != "" {
		aopts = append(aopts, nats.UserInfo(adminUser, pass))
	}
	if n.admin, err = nats.Connect("", aopts...); err != nil {
		return fmt.Errorf("mesh: embedded NATS: in-process connection: %w", err)
	}
	n.retireSharedPassword()
	if n.adm != nil {
		if err := n.serveAdmissions(); err != nil {
			return err
		}
		n.wg.Add(1)
		go n.admissionLoop()
	}
	return nil
}

// connOptions are the options of the relay's connection to urls. It
// authenticates with the credentials file or NKey seed it was given, else
// with a user and password in the URLs (an external server's), else with
// its own mesh key as its NATS key. The embedded server's user in a URL
// is taken off: its password is an invite (presented once, join.go) or
// the retired shared password of earlier versions.
func (n *Node) connOptions(urls []string) ([]nats.Option, error) {
	clean, inv, retired := splitURLs(urls)
	n.urls, n.invite = clean, inv
	copts := []nats.Option{
		nats.Name("crosschat-relay " + n.id.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		// Until the relay that embeds NATS admits this one, the server
		// refuses its key: keep trying rather than give up.
		nats.IgnoreAuthErrorAbort(),
		// Replies come under this relay's own prefix, which no other
		// relay may subscribe to.
		nats.CustomInboxPrefix(inboxPrefix(n.id.ID)),
		nats.ErrorHandler(n.asyncError),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				n.log.Warn("mesh: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			n.log.Info("mesh: reconnected to NATS", "url", c.ConnectedUrlRedacted())
			n.poke()
		}),
	}
	switch {
	case n.opts.CredsFile != "" || n.opts.NKeyFile != "":
		if n.opts.CredsFile != "" {
			copts = append(copts, nats.UserCredentials(n.opts.CredsFile))
		}
		if n.opts.NKeyFile != "" {
			o, err := nats.NkeyOptionFromSeed(n.opts.NKeyFile)
			if err != nil {
				return nil, fmt.Errorf("mesh: nkey %s: %w", n.opts.NKeyFile, err)
			}
			copts = append(copts, o)
		}
	case urlsHaveUser(clean):
		// An external server's user and password, as given.
	case !takesKeys(clean):
		// A server that asks for no credential (a test cluster, or
		// --nats-embed-open) refuses a client that offers a key.
		n.log.Info("mesh: the NATS server asks for no credential; this relay connects without one")
	default:
		copts = append(copts, nats.Nkey(n.id.NKey(), n.id.signNonce))
	}
	if n.opts.TLSCAFile != "" {
		copts = append(copts, nats.RootCAs(n.opts.TLSCAFile))
	}
	if retired {
		n.log.Warn("mesh: the NATS URL carries the shared password of an earlier version, which is retired: this relay connects with its own key " +
			n.id.NKey() + " instead. The relay that embeds NATS admits it once both run this version if it trusts this relay; " +
			"otherwise ask its operator for `crosschat-relay mesh invite` and start with the URL it prints.")
	}
	return copts, nil
}

// takesKeys reports whether the NATS servers at urls authenticate with
// NKEYs: the first that answers says so in its greeting (a nonce to sign).
// When none answers (NATS down as the relay starts) the relay offers its
// key, as a server that admits relays by key needs.
func takesKeys(urls []string) bool {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || u.Scheme == "ws" || u.Scheme == "wss" {
			continue
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "4222")
		}
		info, err := serverInfo(host)
		if err != nil {
			continue
		}
		return info.Nonce != ""
	}
	return true
}

// natsGreeting is what a relay reads of a NATS server's INFO.
type natsGreeting struct {
	Nonce string `json:"nonce"`
}

// serverInfo reads the greeting (INFO) of the NATS server at host:port.
func serverInfo(hostport string) (natsGreeting, error) {
	var info natsGreeting
	c, err := net.DialTimeout("tcp", hostport, time.Second)
	if err != nil {
		return info, err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReaderSize(io.LimitReader(c, 64<<10), 64<<10).ReadString('\n')
	if err != nil {
		return info, err
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "INFO ")
	if !ok {
		return info, fmt.Errorf("not a NATS greeting")
	}
	if err := json.Unmarshal([]byte(rest), &info); err != nil {
		return info, err
	}
	return info, nil
}

// urlsHaveUser reports whether any URL carries a user.
func urlsHaveUser(urls []string) bool {
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.User != nil {
			return true
		}
	}
	return false
}

// connectStrict joins as --nats-strict asks: it presents the invite, if
// any, connects at once and refuses a credential that can delete or purge
// what the mesh keeps.
func (n *Node) connectStrict(copts []nats.Option) error {
	ctx, cancel := context.WithTimeout(n.ctx, 6*opTimeout)
	defer cancel()
	var joinErr error
	if n.needsJoin() {
		joinErr = n.join(ctx)
	}
	nc, err := nats.Connect(strings.Join(n.urls, ","), copts...)
	if err != nil {
		if joinErr != nil {
			return fmt.Errorf("mesh: join with the invite: %w", joinErr)
		}
		return fmt.Errorf("mesh: strict mode (--nats-strict) checks this relay's NATS credential before it joins, and NATS did not let it connect: %w", err)
	}
	if joinErr != nil {
		// Admitted all the same (the answer was lost on the way).
		n.log.Warn("mesh: the invite's answer did not arrive, but this relay's key is admitted", "err", joinErr)
		if err := recordJoined(n.opts.DataDir, n.invite.id); err != nil {
			n.log.Warn("mesh: record the invite used", "err", err)
		}
	}
	n.nc = nc
	c := n.checkCredential(ctx)
	n.mu.Lock()
	n.cred = c
	n.mu.Unlock()
	if err := strictRefusal(c); err != nil {
		return err
	}
	if err := n.strictStreams(ctx); err != nil {
		return err
	}
	n.log.Info("mesh: strict mode: this relay's NATS credential cannot delete or purge what the mesh keeps")
	return nil
}

// checkOnce checks the credential the first time the relay is connected,
// and warns when it can delete or purge what the mesh keeps.
func (n *Node) checkOnce(ctx context.Context) {
	if n.Credential().Checked {
		return
	}
	c := n.checkCredential(ctx)
	n.mu.Lock()
	n.cred = c
	n.mu.Unlock()
	switch {
	case len(c.Can) > 0:
		n.log.Warn("mesh: this relay's NATS credential can "+strings.Join(c.Can, ", ")+
			": anyone holding it can destroy what the mesh keeps. Give each relay its own user (`crosschat-relay mesh nats-config`), "+
			"and start with --nats-strict to refuse such a credential", "can", c.Can)
	case len(c.Unknown) > 0:
		n.log.Warn("mesh: NATS neither allowed nor refused some checks of this relay's credential", "unknown", c.Unknown)
	}
}

// Credential returns what the relay's NATS credential was found to allow.
func (n *Node) Credential() CredentialCheck {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cred
}

// ensureStreams makes the stream and the directory bucket: through the
// privileged in-process connection when this relay embeds NATS (no
// relay's credential may change them), else through the relay's own
// connection, which an external cluster may allow to create them only.
func (n *Node) ensureStreams(ctx context.Context, js jetstream.JetStream) error {
	// A relay's own credential may update them only when it may update
	// any stream (the probe asks): one confined to its own subjects would
	// wait for NATS's timeout, refused.
	mayUpdate := slices.Contains(n.Credential().Can, "update streams")
	if n.onOwnServer() {
		ajs, err := jetstream.New(n.admin)
		if err != nil {
			return fmt.Errorf("jetstream: %w", err)
		}
		js, mayUpdate = ajs, true
	}
	var warns []string
	for _, cfg := range []jetstream.StreamConfig{meshStreamConfig(n.opts.Replicas), dirStreamConfig(n.opts.Refresh, n.opts.Replicas)} {
		warn, err := ensureStream(ctx, js, cfg, mayUpdate)
		if err != nil {
			return err
		}
		if warn != "" {
			warns = append(warns, warn)
		}
	}
	n.mu.Lock()
	changed := strings.Join(warns, "; ") != n.streamWarn
	n.streamWarn = strings.Join(warns, "; ")
	n.mu.Unlock()
	if changed && len(warns) > 0 {
		n.log.Warn("mesh: " + strings.Join(warns, "; "))
	}
	return nil
}

// waitingForNATS records, and logs once per cause, why the relay is not
// connected: a server that does not admit its key is told apart, with
// what to do; an invite refused is said first.
func (n *Node) waitingForNATS(err error) {
	msg := "waiting for NATS"
	if err == nil {
		err = n.nc.LastError()
	}
	if err != nil {
		msg += ": " + err.Error()
		if errors.Is(err, nats.ErrNkeysNotSupported) {
			msg += " — the server asks for no credential, and this relay, started while it could not be reached, offers its key: restart the relay"
		}
		if strings.Contains(strings.ToLower(err.Error()), "authorization") {
			msg += " — the server does not admit this relay (its key " + n.id.NKey() + "): ask the operator of the relay that embeds NATS " +
				"for `crosschat-relay mesh invite` and start with the URL it prints, or, on an external cluster, install the user " +
				"`crosschat-relay mesh nats-config` prints"
		}
	}
	n.mu.Lock()
	if n.joinErr != "" {
		msg = "join with the invite: " + n.joinErr + "; " + msg
	}
	changed := n.natsErr != msg
	n.natsErr = msg
	n.mu.Unlock()
	if changed {
		n.log.Warn("mesh: " + msg)
	}
}

// connectionError is why the relay is not connected to NATS, "" while it is.
func (n *Node) connectionError() string {
	if n.nc.IsConnected() {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.natsErr
}

// onOwnServer reports whether the relay's connection is to the server it
// embeds, whose privileged in-process connection keeps the stream and
// bucket there.
func (n *Node) onOwnServer() bool { return n.admin != nil && len(n.opts.URLs) == 0 }
