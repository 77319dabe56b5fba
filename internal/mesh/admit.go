package mesh

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/crypto/bcrypt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Who the embedded server admits is kept in the data folder: the relays
// that joined with an invite (their NATS key and relay id) and the invites
// not used yet (their secret as a bcrypt hash). Together with the relays
// the operator trusts (their pinned keys, in relay.db) and minus those
// blocked, they make the server's users.
const admitFile = "mesh-nats-members.json"

// legacyCredFile held the one shared password of earlier versions; it is
// retired at the first start of this one.
const legacyCredFile = "mesh-nats-embed.json"

// DefaultInviteTTL is how long a mesh invite can be used.
const DefaultInviteTTL = 24 * time.Hour

// maxOpenInvites bounds the invites waiting to be used.
const maxOpenInvites = 100

// member is a relay admitted by an invite.
type member struct {
	RelayID string `json:"relayId"`
	Name    string `json:"name"`
	NKey    string `json:"nkey"`
	Invite  string `json:"invite"`
	At      string `json:"admittedAt"`
}

// openInvite is an invite not used yet.
type openInvite struct {
	ID      string `json:"id"`
	Hash    string `json:"hash"`
	Expires string `json:"expires"`
}

// admitState is the admission file's content.
type admitState struct {
	Invites []openInvite `json:"invites"`
	Members []member     `json:"members"`
}

// admissions is the admission file, loaded, with the lock of its changes
// and of the server's reloads.
type admissions struct {
	path string

	mu sync.Mutex
	st admitState
	// applied fingerprints the users last given to the server, so an
	// unchanged set is not reloaded.
	applied string
	// used are invites just used, whose users stay a moment so the relay
	// that used one hears the answer before the server cuts it.
	used []usedInvite
}

// usedInvite is an invite used, kept as a user until until.
type usedInvite struct {
	inv   openInvite
	until time.Time
}

// usedGrace is how long an invite's user outlives its use.
const usedGrace = 3 * time.Second

// loadAdmissions reads the admission file in dir (none yet: empty). A file
// others can read is made owner-only again.
func loadAdmissions(dir string) (*admissions, error) {
	a := &admissions{path: filepath.Join(dir, admitFile)}
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return a, nil
	case err != nil:
		return nil, fmt.Errorf("mesh: admissions: %w", err)
	}
	if err := json.Unmarshal(b, &a.st); err != nil {
		return nil, fmt.Errorf("mesh: admissions %s: not an admission file (%v)", a.path, err)
	}
	if runtime.GOOS != "windows" {
		if st, err := os.Stat(a.path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(a.path, 0o600); err != nil {
				return nil, fmt.Errorf("mesh: admissions %s are readable by others and cannot be made owner-only: %w", a.path, err)
			}
		}
	}
	return a, nil
}

// saveLocked writes the admission file (owner-only). Called with a.mu held.
func (a *admissions) saveLocked() error {
	b, _ := json.MarshalIndent(a.st, "", "  ") // plain fields always marshal
	if err := writeFile(a.path, b); err != nil {
		return fmt.Errorf("mesh: admissions: %w", err)
	}
	return nil
}

// inviteToken is what an invite gives the invited relay: the invite's id
// and its secret, written ccm1_<id>_<secret>.
type inviteToken struct{ id, secret string }

const invitePrefix = "ccm1_"

func (t inviteToken) String() string { return invitePrefix + t.id + "_" + t.secret }

// parseInviteToken reads a token String wrote.
func parseInviteToken(s string) (inviteToken, bool) {
	rest, ok := strings.CutPrefix(s, invitePrefix)
	if !ok {
		return inviteToken{}, false
	}
	id, secret, ok := strings.Cut(rest, "_")
	if !ok || !isHex(id, 16) || !isHex(secret, 64) {
		return inviteToken{}, false
	}
	return inviteToken{id: id, secret: secret}, true
}

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// inviteUser is the NATS user of an invite.
func inviteUser(id string) string { return "invite-" + id }

// newInvite makes an invite valid for ttl and records it (its secret only
// as a hash). Expired invites are dropped; at most maxOpenInvites wait.
func (a *admissions) newInvite(now time.Time, ttl time.Duration) (inviteToken, time.Time, error) {
	raw := make([]byte, 40)
	if _, err := rand.Read(raw); err != nil {
		return inviteToken{}, time.Time{}, fmt.Errorf("mesh: invite: %w", err)
	}
	t := inviteToken{id: hex.EncodeToString(raw[:8]), secret: hex.EncodeToString(raw[8:])}
	// The secret is 256 random bits: the hash keeps it out of the file,
	// its cost need not slow a guesser down.
	hash, err := bcrypt.GenerateFromPassword([]byte(t.secret), 8)
	if err != nil {
		return inviteToken{}, time.Time{}, fmt.Errorf("mesh: invite: %w", err)
	}
	expires := now.Add(ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked(now)
	if len(a.st.Invites) >= maxOpenInvites {
		return inviteToken{}, time.Time{}, relay.Errorf(relay.EInvalidRequest, "%d mesh invites are waiting to be used; wait until some expire.", maxOpenInvites)
	}
	a.st.Invites = append(a.st.Invites, openInvite{ID: t.id, Hash: string(hash), Expires: relay.FormatTime(expires)})
	if err := a.saveLocked(); err != nil {
		a.st.Invites = a.st.Invites[:len(a.st.Invites)-1]
		return inviteToken{}, time.Time{}, err
	}
	return t, expires, nil
}

// pruneLocked drops expired invites; it reports whether any went.
func (a *admissions) pruneLocked(now time.Time) bool {
	kept := a.st.Invites[:0]
	for _, inv := range a.st.Invites {
		if exp, err := relay.ParseTime(inv.Expires); err == nil && now.Before(exp) {
			kept = append(kept, inv)
		}
	}
	gone := len(kept) != len(a.st.Invites)
	a.st.Invites = kept
	return gone
}

// authLocked is who the server admits: this relay and the relays that
// joined with an invite or that the operator trusts (their pinned keys),
// none the operator blocked, each with its own subjects only; a user per
// open invite (and one just used, for usedGrace); and the in-process
// admin. Called with a.mu held.
func (a *admissions) authLocked(self Identity, records []relay.MeshRelay, adminPass string, now time.Time) *embedAuth {
	auth := &embedAuth{}
	blocked := map[string]bool{}
	for _, r := range records {
		if r.State == relay.RelayBlocked {
			blocked[r.ID] = true
		}
	}
	seen := map[string]bool{}
	add := func(id, nkey string) {
		if nkey == "" || seen[nkey] || blocked[id] {
			return
		}
		seen[nkey] = true
		auth.nkeys = append(auth.nkeys, &server.NkeyUser{Nkey: nkey, Permissions: relayGrant(id, false).permissions()})
		auth.relays = append(auth.relays, id)
	}
	add(self.ID, self.NKey())
	for _, m := range a.st.Members {
		add(m.RelayID, m.NKey)
	}
	for _, r := range records {
		if r.State == relay.RelayTrusted && r.ID != self.ID {
			if k, err := nkeyOf(r.PublicKey); err == nil {
				add(r.ID, k)
			}
		}
	}
	invites := a.st.Invites[:len(a.st.Invites):len(a.st.Invites)]
	for _, u := range a.used {
		if now.Before(u.until) {
			invites = append(invites, u.inv)
		}
	}
	for _, inv := range invites {
		exp, err := relay.ParseTime(inv.Expires)
		if err != nil || !now.Before(exp) {
			continue
		}
		auth.users = append(auth.users, &server.User{Username: inviteUser(inv.ID), Password: inv.Hash, Permissions: inviteGrant(inv.ID).permissions()})
	}
	auth.users = append(auth.users, adminOf(adminPass))
	return auth
}

// fingerprint identifies a set of users, so an unchanged set is not reloaded.
func (auth *embedAuth) fingerprint() string {
	var parts []string
	for _, u := range auth.nkeys {
		b, _ := json.Marshal(u.Permissions)
		parts = append(parts, "n:"+u.Nkey+string(b))
	}
	for _, u := range auth.users {
		parts = append(parts, "u:"+u.Username+":"+u.Password)
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

// sanitizeName bounds a relay name given at admission, for the log and the
// file: printable, at most 80 characters.
func sanitizeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80])
	}
	return s
}
