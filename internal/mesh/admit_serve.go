package mesh

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// The embedding relay's side of admission. An invite is a NATS user that
// may only publish once to its own admission subject: the invited relay
// connects with it, presents its relay id and NATS key (signed with that
// key), and this relay — whose operator's invite is the approval — adds
// that key as a user confined to the relay's own subjects, drops the
// invite and answers. The invited relay then connects with its key.

// admitRequest is what an invited relay presents.
type admitRequest struct {
	Secret  string `json:"secret"`
	RelayID string `json:"relayId"`
	Name    string `json:"name"`
	NKey    string `json:"nkey"`
	// Sig is the relay's Ed25519 signature of admitSigned (base64).
	Sig string `json:"sig"`
}

// admitAnswer is the embedding relay's answer.
type admitAnswer struct {
	Admitted bool   `json:"admitted"`
	Error    string `json:"error,omitempty"`
}

// maxAdmitRequest bounds an admission request.
const maxAdmitRequest = 4 << 10

// admitSigned is what the invited relay signs: the invite, its id and key.
func admitSigned(inviteID, relayID, nkey string) []byte {
	return []byte("crosschat-admit/1\n" + inviteID + "\n" + relayID + "\n" + nkey)
}

// serveAdmissions answers invited relays on the privileged connection.
func (n *Node) serveAdmissions() error {
	if _, err := n.admin.Subscribe(admitSubject("*"), n.handleAdmit); err != nil {
		return fmt.Errorf("mesh: answer invited relays: %w", err)
	}
	return nil
}

// handleAdmit answers one admission request.
func (n *Node) handleAdmit(m *nats.Msg) {
	inviteID := m.Subject[len(admitSubject("")):]
	switch n.inviteState(inviteID) {
	case inviteUsed:
		b, _ := json.Marshal(admitAnswer{Error: "the invite was used"}) // plain fields always marshal
		_ = m.Respond(b)
		return
	case inviteUnknown:
		// Only an open invite's user may publish here; anything else
		// (a consumer someone pointed here, say) is not worth a log line.
		return
	}
	ans := n.admit(inviteID, m.Data, func(a admitAnswer) {
		b, _ := json.Marshal(a) // plain fields always marshal
		if err := m.Respond(b); err == nil {
			_ = n.admin.Flush()
		}
	})
	if !ans.Admitted {
		n.log.Warn("mesh: an invited relay was refused", "invite", inviteID, "why", ans.Error)
	}
}

// States of an invite, as the admission subject sees it.
const (
	inviteUnknown = iota
	inviteOpen
	inviteUsed // within usedGrace of its use
)

// inviteState says whether invite id waits to be used or was just used.
func (n *Node) inviteState(id string) int {
	n.adm.mu.Lock()
	defer n.adm.mu.Unlock()
	switch {
	case slices.ContainsFunc(n.adm.st.Invites, func(inv openInvite) bool { return inv.ID == id }):
		return inviteOpen
	case slices.ContainsFunc(n.adm.used, func(u usedInvite) bool { return u.inv.ID == id }):
		return inviteUsed
	}
	return inviteUnknown
}

// admit checks a request for invite inviteID and, when it holds, admits
// the relay; answer is called with the outcome while the invite's user can
// still hear it.
func (n *Node) admit(inviteID string, data []byte, answer func(admitAnswer)) admitAnswer {
	refuse := func(format string, a ...any) admitAnswer {
		ans := admitAnswer{Error: fmt.Sprintf(format, a...)}
		answer(ans)
		return ans
	}
	req, pub, err := parseAdmit(inviteID, data)
	if err != nil {
		return refuse("%v", err)
	}
	ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
	defer cancel()
	records, err := n.opts.Store.MeshRelays(ctx)
	if err != nil {
		return refuse("this relay cannot read its admissions now; try again")
	}
	now := n.now()
	a := n.adm
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.st.Invites, func(inv openInvite) bool { return inv.ID == inviteID })
	if i < 0 {
		return refuse("the invite is unknown, used or expired")
	}
	inv := a.st.Invites[i]
	if exp, err := relay.ParseTime(inv.Expires); err != nil || !now.Before(exp) {
		return refuse("the invite expired")
	}
	if bcrypt.CompareHashAndPassword([]byte(inv.Hash), []byte(req.Secret)) != nil {
		return refuse("the invite's secret does not match")
	}
	if why := admitConflict(n.id, a.st.Members, records, req.RelayID, req.NKey); why != "" {
		return refuse("%s", why)
	}
	a.st.Invites = slices.Delete(a.st.Invites, i, i+1)
	a.st.Members = append(a.st.Members, member{RelayID: req.RelayID, Name: sanitizeName(req.Name), NKey: req.NKey, Invite: inviteID, At: relay.FormatTime(now)})
	if err := a.saveLocked(); err != nil {
		a.st.Members = a.st.Members[:len(a.st.Members)-1]
		a.st.Invites = slices.Insert(a.st.Invites, i, inv)
		n.setErr("admit relay", err)
		return refuse("this relay could not record the admission; try again")
	}
	// The new user; the invite's user goes a moment later: removed at
	// once, the server would cut its connection before the relay has read
	// the answer.
	a.used = slices.DeleteFunc(a.used, func(u usedInvite) bool { return !now.Before(u.until) })
	a.used = append(a.used, usedInvite{inv: inv, until: now.Add(usedGrace)})
	if err := n.reloadLocked(records); err != nil {
		n.setErr("admit relay", err)
	}
	ans := admitAnswer{Admitted: true}
	answer(ans)
	time.AfterFunc(usedGrace+100*time.Millisecond, func() {
		if n.ctx.Err() != nil {
			return // closing: the server goes too
		}
		ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
		defer cancel()
		if err := n.readmit(ctx); err != nil && n.ctx.Err() == nil {
			n.setErr("admissions", err)
		}
	})
	n.log.Info("mesh: relay admitted to the embedded NATS server by invite", "relay", sanitizeName(req.Name), "id", req.RelayID,
		"fingerprint", Fingerprint(pub))
	return ans
}

// parseAdmit reads an admission request for invite inviteID: a relay id,
// a NATS user key and that key's signature over both and the invite. It
// returns the request and the key as base64.
func parseAdmit(inviteID string, data []byte) (admitRequest, string, error) {
	var req admitRequest
	if len(data) > maxAdmitRequest || json.Unmarshal(data, &req) != nil {
		return req, "", errors.New("not an admission request")
	}
	if !validRelayID(req.RelayID) {
		return req, "", fmt.Errorf("relay id %q is not a relay id", req.RelayID)
	}
	pub, err := keyOfNKey(req.NKey)
	if err != nil {
		return req, "", err
	}
	raw, _ := base64.StdEncoding.DecodeString(pub)
	sig, err := base64.StdEncoding.DecodeString(req.Sig)
	if err != nil || !ed25519.Verify(raw, admitSigned(inviteID, req.RelayID, req.NKey), sig) {
		return req, "", errors.New("the request is not signed by the key it presents")
	}
	return req, pub, nil
}

// admitConflict says why relay id with nkey cannot be admitted: the id is
// this relay's, is admitted (or pinned) with another key, or is blocked;
// the key is another relay's. "" when it can.
func admitConflict(self Identity, members []member, records []relay.MeshRelay, id, nkey string) string {
	if id == self.ID || nkey == self.NKey() {
		return "that is this relay's own id or key"
	}
	for _, m := range members {
		if m.RelayID == id && m.NKey != nkey {
			return fmt.Sprintf("relay %s is admitted with another key", id)
		}
		if m.NKey == nkey && m.RelayID != id {
			return fmt.Sprintf("that key is admitted for relay %s", m.RelayID)
		}
	}
	for _, r := range records {
		k, _ := nkeyOf(r.PublicKey)
		switch {
		case r.ID == id && r.State == relay.RelayBlocked:
			return fmt.Sprintf("relay %s is blocked here", id)
		case r.ID == id && r.PublicKey != "" && k != nkey:
			return fmt.Sprintf("relay %s is known here with another key", id)
		case r.ID != id && k == nkey:
			return fmt.Sprintf("that key is relay %s's", r.ID)
		}
	}
	return ""
}

// readmit gives the embedded server the users of the admissions now (after
// the operator trusts or blocks a relay, an invite is made or expires): a
// blocked relay's connection is cut at once.
func (n *Node) readmit(ctx context.Context) error {
	if n.adm == nil {
		return nil
	}
	records, err := n.opts.Store.MeshRelays(ctx)
	if err != nil {
		return fmt.Errorf("read relay admissions: %w", err)
	}
	n.adm.mu.Lock()
	defer n.adm.mu.Unlock()
	if n.adm.pruneLocked(n.now()) {
		if err := n.adm.saveLocked(); err != nil {
			return err
		}
	}
	return n.reloadLocked(records)
}

// reloadLocked reloads the server's users when they changed. Called with
// n.adm.mu held.
func (n *Node) reloadLocked(records []relay.MeshRelay) error {
	auth := n.adm.authLocked(n.id, records, n.adminPass, n.now())
	fp := auth.fingerprint()
	if fp == n.adm.applied {
		return nil
	}
	if err := n.relayConsumers(auth.relays); err != nil {
		return err
	}
	if err := reloadEmbedded(n.srv, n.srvOpts, auth); err != nil {
		return err
	}
	n.adm.applied = fp
	return nil
}

// admissionLoop drops expired invites (and their users) every minute.
func (n *Node) admissionLoop() {
	defer n.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
			if err := n.readmit(ctx); err != nil && n.ctx.Err() == nil {
				n.setErr("admissions", err)
			}
			cancel()
		}
	}
}

// retireSharedPassword removes the shared password file of earlier
// versions: the server no longer has such a user.
func (n *Node) retireSharedPassword() {
	path := filepath.Join(n.opts.DataDir, legacyCredFile)
	if _, err := os.Stat(path); err != nil {
		return
	}
	if err := os.Remove(path); err != nil {
		n.log.Warn("mesh: remove the retired shared NATS password", "file", path, "err", err)
		return
	}
	n.log.Warn("mesh: the embedded NATS server no longer has a shared password (" + legacyCredFile + " removed): " +
		"relays this one trusts connect with their own keys once they run this version; " +
		"give any other relay a new `crosschat-relay mesh invite`")
}
