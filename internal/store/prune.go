package store

import (
	"fmt"
)

// MaxProgressReports is how many progress reports a task keeps: past it,
// each new one removes the oldest, so an agent reporting in a loop cannot
// grow a task (and every read of it) without bound.
const MaxProgressReports = 100

// capProgress keeps the newest MaxProgressReports progress reports of a task.
func capProgress(t *tx, taskID string) error {
	if _, err := t.exec(`DELETE FROM reports WHERE task_id = ? AND kind = 'progress' AND rowid NOT IN (
			SELECT rowid FROM reports WHERE task_id = ? AND kind = 'progress' ORDER BY created_at DESC, rowid DESC`+limitSQL(MaxProgressReports)+`)`,
		taskID, taskID); err != nil {
		return fmt.Errorf("cap progress reports: %w", err)
	}
	return nil
}

// pruneOld deletes what outlived the retention window, besides finished
// tasks (Sweep): invites that expired before cutoff, or were revoked or
// used up and created before it; and the run activity of blocked tasks
// that have not changed since cutoff (a task left blocked keeps its row and
// reports, not its whole run log; a queued one keeps the log of its earlier
// runs for the next). It returns the invites and activity
// entries deleted.
func pruneOld(t *tx, cutoff string) (invites, activity int, err error) {
	inv, err := t.execCount("prune invites", `DELETE FROM invites WHERE expires_at <= ?
		OR (created_at <= ? AND (revoked OR (max_uses IS NOT NULL AND max_uses > 0 AND uses >= max_uses)))`, cutoff, cutoff)
	if err != nil {
		return 0, 0, err
	}
	act, err := t.execCount("prune run activity", `DELETE FROM task_activity WHERE task_id IN (
		SELECT id FROM tasks WHERE status = 'blocked' AND updated_at <= ?)`, cutoff)
	if err != nil {
		return 0, 0, err
	}
	return int(inv), int(act), nil
}
