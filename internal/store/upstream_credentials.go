package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// An imported database brings no credential. It is a file anyone may
// hand over: a token hash in it is a token its author knows, which would
// act as that agent (or, given to the built-in operator or another person,
// post to every worker as them), and an open invite in it would enrol
// agents of its author's. So no row arrives with a token (copyRows writes
// NULL, and a row that meets an existing one, the operator, keeps that
// one's kind and token), and every invite arrives revoked. credentials
// names what that takes away, for the import's summary: the agents that
// had a token upstream (they get a new one from the operator and are set
// up with it again) and the invites that could still enrol.
//
// Keeping an agent's token would be safe only if the relay could tell the
// file came from the operator's own upstream relay, which it cannot: the
// upstream database is not signed, and a copy of it is indistinguishable
// from one made up with the same schema.

// credentials lists the upstream agents with a token (never a person, nor
// a slug of a person here) and the invites neither revoked, used up nor
// expired, by label (by id when unlabelled).
func credentials(ctx context.Context, tx *sql.Tx, has map[string]bool) (agents, invites []string, err error) {
	agents, err = strings1(ctx, tx, `SELECT u.slug FROM up.agents AS u
		WHERE u.token_hash IS NOT NULL AND u.token_hash <> '' AND u.kind <> 'human'
			AND NOT EXISTS (SELECT 1 FROM main.agents AS m WHERE m.slug = u.slug AND m.kind = 'human')
		ORDER BY u.slug`)
	if err != nil {
		return nil, nil, fmt.Errorf("read the upstream agents' tokens: %w", err)
	}
	if !has["invites.id"] {
		return agents, nil, nil
	}
	invites, err = strings1(ctx, tx, `SELECT COALESCE(NULLIF(label, ''), id) FROM up.invites
		WHERE revoked = 0 AND (max_uses IS NULL OR uses < max_uses) AND expires_at > ?
		ORDER BY created_at, id`, relay.FormatTime(time.Now()))
	if err != nil {
		return nil, nil, fmt.Errorf("read the upstream invites: %w", err)
	}
	return agents, invites, nil
}

// strings1 runs a query of one text column and returns its values.
func strings1(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		out = append(out, s)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}
