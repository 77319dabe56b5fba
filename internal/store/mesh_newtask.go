package store

import (
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// applyNewTask stores a task relay in.FromRelay sent, which it never told
// this relay of before, for a local recipient, and returns its local id:
// the sender relay's id for it, or a new one when a task here has that id
// (another relay's, or this one's). seq is the number of the message (0:
// not numbered). Like a task posted here, it goes to the oldest claim
// waiting for it in this transaction, or wakes the recipient's waiting
// claims; one for a retired agent is blocked at once, its sender told. A
// change that cannot be a new task is refused.
func (t *tx) applyNewTask(in relay.RemoteApply, seq int64) (string, error) {
	rt := in.Change.Task
	recipient := localName(rt.RecipientSlug, in.SelfID, in.SelfLabel)
	refusal, retired, err := t.newTaskRefusal(in, recipient)
	if err != nil {
		return "", err
	}
	// The task keeps its sender's id, in the form every reader here looks
	// ids up by (applyRemote checked it is a UUID).
	own, err := relay.TaskID("taskId", rt.ID)
	if err != nil {
		return "", err
	}
	if refusal != nil {
		taken, err := hasTask(t.ctx, t.tx, own)
		if err != nil {
			return "", err
		}
		if taken { // a change about a task here, from a relay no party to it
			if refusal, err = t.takenRefusal(own, in.FromRelay); err != nil {
				return "", err
			}
		}
		return "", refusal
	}
	sender, err := t.qualify(rt.SenderSlug, in.FromRelay, in.FromName, in.FromLabel)
	if err != nil {
		return "", err
	}
	// A sender past its open tasks' cap here is refused, as a local one is:
	// no sender fills the queue and the database. (Its relay holds it to
	// its own cap first; a relay sending under ever new names is one to
	// block: docs/security.md.)
	if err := checkOpenTasks(t, sender); relay.ErrorCode(err) == relay.ETooManyOpenTasks {
		return "", &relay.MeshRefusal{Reason: "open-tasks", Detail: fmt.Sprintf("task %s from %s: %s", rt.ID, sender, relay.ErrorMessage(err))}
	} else if err != nil {
		return "", err
	}
	// Its parent and conversation count only as tasks the same relay told
	// this one of.
	parent, err := t.peerTaskOf(in.FromRelay, rt.ParentTaskID)
	if err != nil {
		return "", err
	}
	prio, err := relay.Priority("priority", rt.Priority)
	if err != nil {
		prio = relay.PriorityNormal
	}
	conv, hops, target := remoteConversation(rt)
	depth := remoteCount(rt.Depth)
	if conv != nil {
		if conv, err = t.remoteConversationOf(in.FromRelay, conv.(string)); err != nil {
			return "", err
		}
	}
	// Queued by when it arrived: the creation time its sender wrote is the
	// sender's word, and a backdated one (or one that is no time at all)
	// would put it before tasks posted here earlier. It keeps its sender's
	// id, but for a task here that has it, or a conversation of that id
	// here (without a conversation of its own, a task's is its id: it
	// would join that one).
	insert := func(id string) (int64, error) {
		return t.execCount("insert remote task", `INSERT INTO tasks (id, sender_slug, recipient_slug, title, instructions, required_capabilities, priority, status,
				created_at, updated_at, parent_task_id, depth, conversation_id, hops, target_session)
			SELECT ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE conversation_id = ?1)
			ON CONFLICT (id) DO NOTHING`,
			id, sender, recipient, rt.Title, rt.Instructions, capsJSON(rt.RequiredCapabilities), prio,
			t.ts, t.ts, parent, depth, conv, hops, target)
	}
	id := own
	n, err := insert(id)
	if err == nil && n == 0 {
		id = relay.NewID()
		n, err = insert(id)
	}
	if err == nil && n == 0 {
		err = fmt.Errorf("insert remote task: id %s taken", id)
	}
	if err != nil {
		return "", err
	}
	if _, err := t.exec(`INSERT INTO mesh_task_peers (task_id, relay_id, side, remote_id, in_seq) VALUES (?, ?, 'sender', ?, ?)`,
		id, in.FromRelay, rt.ID, seq); err != nil {
		return "", fmt.Errorf("record task sender relay: %w", err)
	}
	reports, err := t.copyReports(id, rt.Reports)
	if err != nil {
		return "", err
	}
	// The task is the row just inserted, as scanTask would read it back.
	task := relay.Task{ID: id, SenderSlug: sender, RecipientSlug: recipient, Title: rt.Title, Instructions: rt.Instructions,
		RequiredCapabilities: append([]string{}, rt.RequiredCapabilities...), Priority: prio, Status: relay.StatusQueued,
		CreatedAt: t.ts, UpdatedAt: t.ts, Depth: depth, ConversationID: id, Hops: hops, Reports: append([]relay.Report{}, reports...)}
	if p, ok := parent.(string); ok {
		task.ParentTaskID = p
	}
	if c, ok := conv.(string); ok {
		task.ConversationID = c
	}
	if s, ok := target.(string); ok {
		task.TargetSession = s
	}
	t.taskKnown(task)
	if retired {
		// Blocked at once, as its tasks were at its retirement: its sender
		// learns of it, where it would wait for ever.
		return id, blockTasksOfRetired(t, recipient, id)
	}
	return id, t.handOff(task)
}

// newTaskRefusal says why a change about a task its relay never told this
// one of cannot be a new task (nil when it can): a cancel, a requeue or a
// closed task's state never creates one, and a task is only for an agent
// of this relay; retired says that agent is retired.
func (t *tx) newTaskRefusal(in relay.RemoteApply, recipient string) (refusal *relay.MeshRefusal, retired bool, err error) {
	rt, ev := in.Change.Task, in.Change.Event
	if !rt.Status.Open() || ev != nil && (ev.Type == relay.EventTaskCancelled || ev.Type == relay.EventTaskRequeued) {
		return &relay.MeshRefusal{Reason: "closed-task", Detail: fmt.Sprintf("task %s is not known here and arrived as %s, not as a new task", rt.ID, rt.Status)}, false, nil
	}
	known, retired, err := t.isLocalAgent(recipient)
	if err != nil || known {
		return nil, retired, err
	}
	return &relay.MeshRefusal{Reason: "recipient", Detail: fmt.Sprintf("task %s: %s is not an agent of this relay", rt.ID, rt.RecipientSlug)}, false, nil
}

// remoteConversation is the conversation column (NULL when the task started
// its own), hop count and target session column of a task another relay
// sent, so the hand-off limit keeps counting across relays. Hops below the
// depth are not taken; an invalid id or session name is dropped.
func remoteConversation(rt relay.Task) (conv any, hops int, target any) {
	if rt.ConversationID != "" && rt.ConversationID != rt.ID {
		if id, err := relay.TaskID("conversationId", rt.ConversationID); err == nil {
			conv = id
		}
	}
	if s, err := relay.TargetSession("targetSession", rt.TargetSession); err == nil && s != "" {
		target = s
	}
	return conv, remoteCount(max(rt.Hops, rt.Depth)), target
}

// remoteCount bounds a hop count or depth another relay sent to
// 0..relay.MaxChainLimit+1: past any limit, so a hand-off of the task is
// refused as before, and never near an int's end, where the next hop's count
// would wrap around below the limit.
func remoteCount(n int) int {
	return min(max(n, 0), relay.MaxChainLimit+1)
}
