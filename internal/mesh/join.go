package mesh

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// The invited relay's side of admission: it presents its key once with
// the invite, then connects with that key (see admit_serve.go).

// embedURLUser is the user name of the embedded server's URLs in invites:
// its password is an invite token (or, from earlier versions, the shared
// password, now retired).
const embedURLUser = "crosschat"

// joinedFile records, on an invited relay, the invites it has used, so a
// restart with the same command line does not present one again.
const joinedFile = "mesh-nats-joined.json"

// splitURLs strips the embedded server's user from urls, returning the
// invite its password carries, if any, and whether a retired shared
// password was given.
func splitURLs(urls []string) (clean []string, inv *inviteToken, retired bool) {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || u.User.Username() != embedURLUser {
			clean = append(clean, raw)
			continue
		}
		pass, _ := u.User.Password()
		if t, ok := parseInviteToken(pass); ok {
			inv = &t
		} else {
			retired = true
		}
		u.User = nil
		clean = append(clean, u.String())
	}
	return clean, inv, retired
}

// errRefused marks an admission that will not succeed by trying again.
var errRefused = errors.New("refused")

// joinedInvites reads the invites this relay has used.
func joinedInvites(dir string) []string {
	var ids []string
	b, err := os.ReadFile(filepath.Join(dir, joinedFile))
	if err == nil {
		_ = json.Unmarshal(b, &ids)
	}
	return ids
}

// recordJoined adds invite id to the invites used (the last 50 kept).
func recordJoined(dir, id string) error {
	ids := append(joinedInvites(dir), id)
	if len(ids) > 50 {
		ids = ids[len(ids)-50:]
	}
	b, _ := json.Marshal(ids) // strings always marshal
	return writeFile(filepath.Join(dir, joinedFile), b)
}

// needsJoin reports whether the invite given has not been used by this relay.
func (n *Node) needsJoin() bool {
	return n.invite != nil && !slices.Contains(joinedInvites(n.opts.DataDir), n.invite.id)
}

// join presents this relay's key with the invite, once. An error wrapping
// errRefused will not go away by trying again.
func (n *Node) join(ctx context.Context) error {
	t := *n.invite
	opts := []nats.Option{
		nats.Name("crosschat-relay " + n.id.Name + " (joining)"),
		nats.UserInfo(inviteUser(t.id), t.secret),
		nats.CustomInboxPrefix(inboxPrefix("admit_" + t.id)),
		nats.MaxReconnects(0),
		nats.Timeout(opTimeout),
	}
	if n.opts.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(n.opts.TLSCAFile))
	}
	nc, err := nats.Connect(strings.Join(n.urls, ","), opts...)
	if errors.Is(err, nats.ErrAuthorization) || err != nil && strings.Contains(strings.ToLower(err.Error()), "authorization") {
		return fmt.Errorf("%w: the NATS server does not know the invite: it was used, it expired, or the relay that made it runs an older version; "+
			"ask its operator for a new one (`crosschat-relay mesh invite`)", errRefused)
	}
	if err != nil {
		return fmt.Errorf("connect to NATS with the invite: %w", err)
	}
	defer nc.Close()
	sig, err := n.id.signNonce(admitSigned(t.id, n.id.ID, n.id.NKey()))
	if err != nil {
		return err
	}
	body, _ := json.Marshal(admitRequest{Secret: t.secret, RelayID: n.id.ID, Name: n.id.Name, NKey: n.id.NKey(), Sig: base64.StdEncoding.EncodeToString(sig)})
	rctx, cancel := context.WithTimeout(ctx, 2*opTimeout)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, admitSubject(t.id), body)
	if err != nil {
		return fmt.Errorf("present this relay's key with the invite: %w", err)
	}
	var ans admitAnswer
	if err := json.Unmarshal(msg.Data, &ans); err != nil {
		return fmt.Errorf("the answer to the invite: %w", err)
	}
	if !ans.Admitted {
		return fmt.Errorf("%w: the relay that made the invite refused it: %s", errRefused, ans.Error)
	}
	if err := recordJoined(n.opts.DataDir, t.id); err != nil && !errors.Is(err, fs.ErrNotExist) {
		n.log.Warn("mesh: record the invite used", "err", err)
	}
	n.log.Info("mesh: admitted to the NATS server by the invite; connecting with this relay's key", "nkey", n.id.NKey())
	return nil
}

// joinLoop presents the invite until it is answered: admitted, or refused
// for good (said in the status). NATS not answering is tried again.
func (n *Node) joinLoop() {
	for n.ctx.Err() == nil {
		err := n.join(n.ctx)
		if err == nil {
			if !n.nc.IsConnected() {
				_ = n.nc.ForceReconnect()
			}
			return
		}
		if n.nc.IsConnected() {
			// Admitted all the same: the answer was lost on the way.
			_ = recordJoined(n.opts.DataDir, n.invite.id)
			return
		}
		n.setErr("join with the invite", err)
		if errors.Is(err, errRefused) {
			n.mu.Lock()
			n.joinErr = err.Error()
			n.mu.Unlock()
			return
		}
		select {
		case <-n.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
