package store

import "github.com/crosschat/crosschat-relay/internal/relay"

// SetSecrets names values (the admin token) that must never be stored in a
// report or a posted task: they are replaced by "[hidden]", like anything
// shaped as an agent token, run token or invite code. An agent run by a
// worker can read what its user can read; this keeps it from handing the
// relay's keys to whoever reads its reports.
func (db *DB) SetSecrets(secrets ...string) {
	s := append([]string(nil), secrets...)
	db.secrets.Store(&s)
}

// scrub hides the relay's secrets and token-shaped strings in s.
func (db *DB) scrub(s string) string {
	var secrets []string
	if p := db.secrets.Load(); p != nil {
		secrets = *p
	}
	return relay.RedactSecrets(s, secrets...)
}
