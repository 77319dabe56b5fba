package store

// A task's reports: its timeline of progress, results and blockers, each a
// row of reports written inside the write that made it.

import (
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// report appends a report to a task's timeline.
func (t *tx) report(taskID, kind, message, result string) error {
	_, err := t.insertReport(taskID, kind, message, result)
	return err
}

// addReport appends a report to the task's timeline, in the database and
// in task.
func (t *tx) addReport(task *relay.Task, kind, message, result string) error {
	r, err := t.insertReport(task.ID, kind, message, result)
	if err != nil {
		return err
	}
	task.Reports = append(task.Reports, r)
	return nil
}

func (t *tx) insertReport(taskID, kind, message, result string) (relay.Report, error) {
	r := relay.Report{ID: relay.NewID(), Kind: kind, Message: message, Result: result, CreatedAt: t.ts}
	if _, err := t.exec(`INSERT INTO reports (id, task_id, kind, message, result, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		r.ID, taskID, kind, message, nullString(result), t.ts); err != nil {
		return r, fmt.Errorf("insert report: %w", err)
	}
	return r, nil
}
