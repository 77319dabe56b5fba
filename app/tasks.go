package app

import (
	"context"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Tasks is the dashboard's view of the task lifecycle. Actions on a task
// (cancel, requeue, request changes) are taken on behalf of the task's
// sender, marked "(via dashboard)".
type Tasks struct{ c *core }

// TaskDetail is a task with its timeline and the tasks it relates to.
type TaskDetail struct {
	Task    relay.Task         `json:"task"`
	Related relay.RelatedTasks `json:"related"`
}

// NewTask is a task the operator sends.
type NewTask struct {
	RecipientSlug        string   `json:"recipientSlug"`
	Title                string   `json:"title"`
	Instructions         string   `json:"instructions"`
	RequiredCapabilities []string `json:"requiredCapabilities"`
	Priority             int      `json:"priority"`
}

// List returns task summaries, newest change first.
func (t *Tasks) List(f relay.TaskFilter) ([]relay.TaskSummary, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return nil, err
	}
	return svc.ListTasks(ctx, f)
}

// Get returns one task with its reports and related tasks.
func (t *Tasks) Get(id string) (TaskDetail, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return TaskDetail{}, err
	}
	if id, err = relay.TaskID("id", id); err != nil {
		return TaskDetail{}, err
	}
	task, err := svc.Task(ctx, id)
	if err != nil {
		return TaskDetail{}, err
	}
	rel, err := svc.RelatedTasks(ctx, id)
	if err != nil {
		return TaskDetail{}, err
	}
	return TaskDetail{Task: task, Related: rel}, nil
}

// Post sends a task from the operator.
func (t *Tasks) Post(in NewTask) (relay.Task, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return relay.Task{}, err
	}
	return svc.PostTask(ctx, relay.PostTaskInput{
		SenderSlug:           svc.OperatorSlug(),
		RecipientSlug:        in.RecipientSlug,
		Title:                in.Title,
		Instructions:         in.Instructions,
		RequiredCapabilities: in.RequiredCapabilities,
		Priority:             in.Priority,
	})
}

// Cancel cancels an open task.
func (t *Tasks) Cancel(id, reason string) (relay.Task, error) {
	return t.asSender(id, func(s relay.Service, ctx context.Context, sender string, task relay.Task) (relay.Task, error) {
		return s.CancelTask(ctx, sender, task.ID, reason)
	})
}

// Requeue sends a blocked task back to its recipient with a note.
func (t *Tasks) Requeue(id, note string) (relay.Task, error) {
	return t.asSender(id, func(s relay.Service, ctx context.Context, sender string, task relay.Task) (relay.Task, error) {
		return s.RequeueTask(ctx, sender, task.ID, note)
	})
}

// RequestChanges reopens a completed task with a note on what to change.
func (t *Tasks) RequestChanges(id, note string) (relay.Task, error) {
	return t.asSender(id, func(s relay.Service, ctx context.Context, sender string, task relay.Task) (relay.Task, error) {
		return s.RequestChanges(ctx, sender, task.ID, note)
	})
}

func (t *Tasks) asSender(id string, do func(relay.Service, context.Context, string, relay.Task) (relay.Task, error)) (relay.Task, error) {
	svc, ctx, err := t.c.get()
	if err != nil {
		return relay.Task{}, err
	}
	if id, err = relay.TaskID("id", id); err != nil {
		return relay.Task{}, err
	}
	task, err := svc.Task(ctx, id)
	if err != nil {
		return relay.Task{}, err
	}
	return do(svc, relay.ByOperator(ctx), task.SenderSlug, task)
}
