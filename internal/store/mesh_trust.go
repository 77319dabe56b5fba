package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Relay admission and held envelopes (migration 0013).

const meshRelayColumns = `relay_id, name, public_key, COALESCE(new_key, ''), COALESCE(new_name, ''), state, first_seen, COALESCE(changed_at, '')`

func scanMeshRelay(r rowScanner) (relay.MeshRelay, error) {
	var m relay.MeshRelay
	err := r.Scan(&m.ID, &m.Name, &m.PublicKey, &m.NewKey, &m.NewName, &m.State, &m.FirstSeen, &m.ChangedAt)
	return m, err
}

// SeeRelay records a relay seen in the directory or on an envelope. A new
// relay is pending (trusted with autoTrust) and its first key is pinned; a
// key other than the pinned one is kept as new_key and puts a trusted relay
// back to pending (changed is then true). A name other than the one it was
// trusted under is kept as new_name and puts it back to pending the same
// way (its name changes when the operator trusts it again). A blocked
// relay stays blocked. With autoTrust a changed key or name is taken at
// once (the NATS account is the boundary) and changed still reports a key.
func (m *Mesh) SeeRelay(ctx context.Context, id, name, key string, autoTrust bool) (relay.MeshRelay, bool, error) {
	var (
		out     relay.MeshRelay
		changed bool
	)
	if id == "" {
		return out, false, errors.New("see relay: an id is required")
	}
	if len(name) > 80 {
		name = name[:80]
	}
	err := m.db.write(ctx, "see relay", func(t *tx) error {
		cur, err := scanMeshRelay(t.tx.QueryRowContext(t.ctx, `SELECT `+meshRelayColumns+` FROM mesh_relays WHERE relay_id = ?`, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			state := relay.RelayPending
			if autoTrust && key != "" {
				state = relay.RelayTrusted
			}
			if _, err := t.exec(`INSERT INTO mesh_relays (relay_id, public_key, first_seen, name, state, changed_at) VALUES (?, ?, ?, ?, ?, ?)`,
				id, key, t.ts, name, state, t.ts); err != nil {
				return fmt.Errorf("record relay %s: %w", id, err)
			}
			out = relay.MeshRelay{ID: id, Name: name, PublicKey: key, State: state, FirstSeen: t.ts, ChangedAt: t.ts}
			return nil
		case err != nil:
			return fmt.Errorf("read relay %s: %w", id, err)
		}
		next := cur
		switch {
		case name == "" || name == cur.Name:
			next.NewName = "" // its trusted name shown again: a trust keeps it
		case cur.Name == "":
			next.Name = name // a record of an earlier version, with no name
		case cur.State == relay.RelayTrusted && !autoTrust:
			next.NewName, next.State, next.ChangedAt = name, relay.RelayPending, t.ts
		case cur.State == relay.RelayPending && (cur.NewKey != "" || cur.NewName != "") && !autoTrust:
			next.NewName = name // pending again after trust: the operator decides
		default:
			next.Name = name // never trusted (or the account is the boundary)
		}
		switch {
		case key == "":
		case key == cur.PublicKey:
			// The pinned key is shown again: a trust now pins it, not the
			// other key seen meanwhile (the relay stays as it is).
			next.NewKey = ""
		case cur.PublicKey == "":
			next.PublicKey = key
			if autoTrust && cur.State == relay.RelayPending {
				next.State = relay.RelayTrusted
			}
		case key != cur.NewKey:
			changed = true
			next.NewKey = key
			if cur.State == relay.RelayTrusted {
				next.State = relay.RelayPending
			}
			if autoTrust && cur.State != relay.RelayBlocked {
				next.PublicKey, next.NewKey, next.State = key, "", relay.RelayTrusted
			}
			next.ChangedAt = t.ts
		}
		if next == cur {
			out = cur
			return nil
		}
		if _, err := t.exec(`UPDATE mesh_relays SET name = ?, public_key = ?, new_key = NULLIF(?, ''), new_name = NULLIF(?, ''), state = ?, changed_at = NULLIF(?, '') WHERE relay_id = ?`,
			next.Name, next.PublicKey, next.NewKey, next.NewName, next.State, next.ChangedAt, id); err != nil {
			return fmt.Errorf("update relay %s: %w", id, err)
		}
		out = next
		return nil
	})
	return out, changed, err
}

// MeshRelays lists the relays seen, by name then id.
func (m *Mesh) MeshRelays(ctx context.Context) ([]relay.MeshRelay, error) {
	return queryAll(ctx, m.db.r, "list relays", scanMeshRelay, `SELECT `+meshRelayColumns+` FROM mesh_relays ORDER BY name, relay_id`)
}

// SetRelayState trusts or blocks a relay. Trusting pins exactly key, which
// must be the relay's pinned key or the other key it now shows (new_key):
// the one whose fingerprint the operator approved. Any other key (the
// relay's keys changed since the operator looked) is refused; a relay whose
// key is not known yet cannot be trusted. key is ignored for other states.
func (m *Mesh) SetRelayState(ctx context.Context, id, state, key string) (relay.MeshRelay, error) {
	var out relay.MeshRelay
	if state != relay.RelayTrusted && state != relay.RelayBlocked && state != relay.RelayPending {
		return out, relay.Errorf(relay.EInvalidRequest, "state: must be trusted, blocked or pending.")
	}
	err := m.db.write(ctx, "set relay state", func(t *tx) error {
		cur, err := scanMeshRelay(t.tx.QueryRowContext(t.ctx, `SELECT `+meshRelayColumns+` FROM mesh_relays WHERE relay_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return relay.Errorf(relay.EInvalidRequest, "No relay %s has been seen.", id)
		}
		if err != nil {
			return fmt.Errorf("read relay %s: %w", id, err)
		}
		if state == relay.RelayTrusted {
			switch {
			case cur.PublicKey == "" && cur.NewKey == "":
				return relay.Errorf(relay.EInvalidRequest, "Relay %s has shown no key yet, so it cannot be trusted; wait until it is in the mesh directory.", id)
			case key == "":
				return relay.Errorf(relay.EInvalidRequest, "Trusting relay %s needs the key to pin.", id)
			case key == cur.NewKey:
				cur.PublicKey, cur.NewKey = cur.NewKey, ""
			case key == cur.PublicKey:
				// The key first seen is pinned; another key shown meanwhile
				// stays listed (and is never pinned by this trust).
			default:
				return relay.Errorf(relay.EInvalidRequest, "Relay %s's key changed since it was shown: look at its fingerprint again (crosschat-relay mesh relays) before trusting it.", id)
			}
		}
		if state == relay.RelayTrusted && cur.NewName != "" {
			cur.Name, cur.NewName = cur.NewName, "" // trusted under the name it shows
		}
		cur.State, cur.ChangedAt = state, t.ts
		if _, err := t.exec(`UPDATE mesh_relays SET name = ?, public_key = ?, new_key = NULLIF(?, ''), new_name = NULLIF(?, ''), state = ?, changed_at = ? WHERE relay_id = ?`,
			cur.Name, cur.PublicKey, cur.NewKey, cur.NewName, cur.State, cur.ChangedAt, id); err != nil {
			return fmt.Errorf("set relay %s %s: %w", id, state, err)
		}
		out = cur
		if state == relay.RelayBlocked {
			return t.stopRelayTasks(cur)
		}
		return nil
	})
	return out, err
}

// stopRelayTasks cancels the tasks relay r sent that have not started
// (queued here), so none reaches a worker once the operator blocked it;
// each recipient is told. A task being worked on is left to finish. The
// relay is told each task's state if it is ever trusted again.
func (t *tx) stopRelayTasks(r relay.MeshRelay) error {
	rows, err := t.tx.QueryContext(t.ctx, `SELECT t.id, t.recipient_slug, t.title FROM tasks t JOIN mesh_task_peers p ON p.task_id = t.id
		WHERE p.relay_id = ? AND p.side = 'sender' AND t.status = 'queued'`, r.ID)
	if err != nil {
		return fmt.Errorf("find the tasks of relay %s: %w", r.ID, err)
	}
	type queued struct{ id, recipient, title string }
	var qs []queued
	for rows.Next() {
		var q queued
		if err := rows.Scan(&q.id, &q.recipient, &q.title); err != nil {
			rows.Close()
			return fmt.Errorf("find the tasks of relay %s: %w", r.ID, err)
		}
		qs = append(qs, q)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("find the tasks of relay %s: %w", r.ID, err)
	}
	why := fmt.Sprintf("relay %s (%s) was blocked here", r.Name, r.ID)
	for _, q := range qs {
		if _, err := t.exec(`UPDATE tasks SET status = 'cancelled', lease_expires_at = NULL, updated_at = ? WHERE id = ?`, t.ts, q.id); err != nil {
			return fmt.Errorf("cancel task %s: %w", q.id, err)
		}
		if err := t.report(q.id, relay.ReportProgress, "Cancelled: "+why, ""); err != nil {
			return err
		}
		if err := t.event(q.recipient, relay.EventTaskCancelled, q.id, fmt.Sprintf("“%s” was cancelled: %s", q.title, why)); err != nil {
			return err
		}
		if _, err := t.taskChanged(q.id); err != nil {
			return err
		}
	}
	return nil
}

// ForgetPendingRelay deletes relay id's admission record if it is pending
// with no other key or name shown (a relay the operator never decided on);
// true when it did. Its held envelopes stay.
func (m *Mesh) ForgetPendingRelay(ctx context.Context, id string) (bool, error) {
	var n int64
	err := m.db.write(ctx, "forget relay", func(t *tx) error {
		var err error
		n, err = t.execCount("forget relay", `DELETE FROM mesh_relays WHERE relay_id = ? AND state = 'pending' AND new_key IS NULL AND new_name IS NULL`, id)
		return err
	})
	return n > 0, err
}

// Bounds of what is held, in envelopes and bytes: per sending relay and in
// all (a client that makes up relay ids cannot fill the disk). Envelopes of
// a newer version (whose signature this build cannot judge) are bounded
// apart from the rest, so they cannot crowd out a relay's signed tasks.
const (
	maxHeldPerRelay      = 1000
	maxHeld              = 10000
	maxHeldBytesPerRelay = 64 << 20
	maxHeldBytes         = 256 << 20
)

// HoldEnvelope keeps an envelope to apply later; false when its relay's
// message of that id is held already (ids are their relay's: another
// relay's envelope of the same id is held beside it). Past the bounds (counted apart for reason version) it
// refuses with a *relay.MeshRefusal (reason held-full).
func (m *Mesh) HoldEnvelope(ctx context.Context, h relay.HeldEnvelope) (bool, error) {
	var n int64
	err := m.db.write(ctx, "hold envelope", func(t *tx) error {
		var held int
		if err := t.tx.QueryRowContext(t.ctx, `SELECT COUNT(*) FROM mesh_held WHERE from_relay = ? AND msg_id = ?`, h.FromRelay, h.MsgID).Scan(&held); err != nil {
			return fmt.Errorf("find held envelope: %w", err)
		}
		if held > 0 {
			return nil
		}
		version := h.Reason == "version"
		var perRelay, total int
		var perRelayBytes, totalBytes int64
		if err := t.tx.QueryRowContext(t.ctx, `SELECT
				(SELECT COUNT(*) FROM mesh_held WHERE from_relay = ? AND (reason = 'version') = ?),
				(SELECT COALESCE(SUM(LENGTH(data)), 0) FROM mesh_held WHERE from_relay = ? AND (reason = 'version') = ?),
				(SELECT COUNT(*) FROM mesh_held WHERE (reason = 'version') = ?),
				(SELECT COALESCE(SUM(LENGTH(data)), 0) FROM mesh_held WHERE (reason = 'version') = ?)`,
			h.FromRelay, version, h.FromRelay, version, version, version).Scan(&perRelay, &perRelayBytes, &total, &totalBytes); err != nil {
			return fmt.Errorf("count held envelopes: %w", err)
		}
		size := int64(len(h.Data))
		if perRelay >= maxHeldPerRelay || total >= maxHeld || perRelayBytes+size > maxHeldBytesPerRelay || totalBytes+size > maxHeldBytes {
			return &relay.MeshRefusal{Reason: "held-full", Detail: fmt.Sprintf("%d envelopes (%d bytes) held from relay %s, %d (%d bytes) in all",
				perRelay, perRelayBytes, h.FromRelay, total, totalBytes)}
		}
		var err error
		n, err = t.execCount("hold envelope", `INSERT INTO mesh_held (msg_id, from_relay, reason, task_id, title, sender_slug, recipient_slug, data, received_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (from_relay, msg_id) DO NOTHING`,
			h.MsgID, h.FromRelay, h.Reason, h.TaskID, h.Title, h.SenderSlug, h.RecipientSlug, h.Data, t.ts)
		return err
	})
	return n > 0, err
}

// HeldEnvelopes returns up to limit held envelopes, oldest first, of
// fromRelay ("" for all) and reason ("" for any).
func (m *Mesh) HeldEnvelopes(ctx context.Context, fromRelay, reason string, limit int) ([]relay.HeldEnvelope, error) {
	return m.HeldEnvelopesAfter(ctx, fromRelay, reason, 0, limit)
}

// HeldEnvelopesAfter is HeldEnvelopes from seq afterSeq on (exclusive), so
// a caller pages past envelopes it leaves held.
func (m *Mesh) HeldEnvelopesAfter(ctx context.Context, fromRelay, reason string, afterSeq int64, limit int) ([]relay.HeldEnvelope, error) {
	limit = relay.Clamp(limit, 100, 1, 1000)
	return queryAll(ctx, m.db.r, "list held envelopes", func(r rowScanner) (relay.HeldEnvelope, error) {
		var h relay.HeldEnvelope
		err := r.Scan(&h.Seq, &h.MsgID, &h.FromRelay, &h.Reason, &h.TaskID, &h.Title, &h.SenderSlug, &h.RecipientSlug, &h.Data, &h.ReceivedAt)
		return h, err
	}, `SELECT seq, msg_id, from_relay, reason, task_id, title, sender_slug, recipient_slug, data, received_at FROM mesh_held
		WHERE seq > ? AND (? = '' OR from_relay = ?) AND (? = '' OR reason = ?) ORDER BY seq`+limitSQL(limit), afterSeq, fromRelay, fromRelay, reason, reason)
}

// DropHeld removes a held envelope.
func (m *Mesh) DropHeld(ctx context.Context, seq int64) error {
	return m.db.writeOne(ctx, "drop held envelope", `DELETE FROM mesh_held WHERE seq = ?`, seq)
}
