package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Settings keys.
const (
	keyChainMaxDepth = "chain.maxDepth"
	keyWorkersPaused = "workers.paused"
	keyMaxOpenTasks  = "tasks.maxOpenPerSender"
)

// upsertSettingSQL stores the value of one settings key; settingSQL reads it.
const (
	upsertSettingSQL = `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	settingSQL       = `SELECT value FROM settings WHERE key = ?`
)

// Settings returns the operator's relay-wide settings, with defaults for
// keys never set.
func (db *DB) Settings(ctx context.Context) (relay.Settings, error) {
	return readSettings(ctx, db.r)
}

func readSettings(ctx context.Context, q queryer) (relay.Settings, error) {
	out := relay.Settings{MaxChainDepth: relay.DefaultChainLimit, MaxOpenTasksPerSender: relay.DefaultMaxOpenTasksPerSender}
	rows, err := q.QueryContext(ctx, `SELECT key, value FROM settings`)
	if err != nil {
		return out, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return out, fmt.Errorf("read settings: %w", err)
		}
		switch k {
		case keyChainMaxDepth:
			if out.MaxChainDepth, err = strconv.Atoi(v); err != nil {
				return out, fmt.Errorf("read settings: %s = %q: %w", k, v, err)
			}
		case keyWorkersPaused:
			out.WorkersPaused = v == "true"
		case keyMaxOpenTasks:
			if out.MaxOpenTasksPerSender, err = strconv.Atoi(v); err != nil {
				return out, fmt.Errorf("read settings: %s = %q: %w", k, v, err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read settings: %w", err)
	}
	return out, nil
}

// UpdateSettings stores the settings and publishes a settings change.
func (db *DB) UpdateSettings(ctx context.Context, s relay.Settings) (relay.Settings, error) {
	s, err := s.Validate()
	if err != nil {
		return relay.Settings{}, err
	}
	var out relay.Settings
	err = db.write(ctx, "update settings", func(t *tx) error {
		values := map[string]string{
			keyChainMaxDepth: strconv.Itoa(s.MaxChainDepth),
			keyWorkersPaused: strconv.FormatBool(s.WorkersPaused),
		}
		if s.MaxOpenTasksPerSender > 0 { // 0: a client that does not know the setting keeps it
			values[keyMaxOpenTasks] = strconv.Itoa(s.MaxOpenTasksPerSender)
		}
		for k, v := range values {
			if _, err := t.exec(upsertSettingSQL, k, v); err != nil {
				return fmt.Errorf("store setting %s: %w", k, err)
			}
		}
		if out, err = readSettings(t.ctx, t.tx); err != nil {
			return err
		}
		c := out
		t.publish(relay.Change{Type: relay.ChangeSettings, Settings: &c})
		return nil
	})
	return out, err
}
