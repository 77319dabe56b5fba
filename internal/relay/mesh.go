package relay

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Signature marks on remote tasks and updates. Only a trusted relay's
// envelopes are applied, and only with a good signature, so a stored mark is
// verified; unverified and mismatch remain for what older versions stored.
const (
	// MarkVerified: the envelope's signature checks against the sending
	// relay's key in the directory, which matches the key first seen for it.
	MarkVerified = "verified"
	// MarkUnverified: no key is known for the sending relay.
	MarkUnverified = "unverified"
	// MarkMismatch: the signature is bad, or the relay's key changed.
	MarkMismatch = "mismatch"
)

// MeshEvent is one journal entry carried between relays. ID is unique across
// the mesh (the origin relay's id and its journal sequence), so applying it
// twice changes nothing.
type MeshEvent struct {
	ID            string `json:"id"`
	RecipientSlug string `json:"recipientSlug"`
	Type          string `json:"type"`
	Summary       string `json:"summary"`
	CreatedAt     string `json:"createdAt"`
}

// MeshChange is what one relay tells another about a task: the task as the
// sending relay has it (with its whole timeline) and, optionally, one new
// journal entry. From the sender's relay to the owner it is a new task or a
// sender action (cancel, requeue, request changes); from the owner back it
// is the task's new state.
type MeshChange struct {
	Task  Task       `json:"task"`
	Event *MeshEvent `json:"event,omitempty"`
	// Seq numbers the messages one relay sends another about one task, from
	// 1, in the order it made them, so the receiving relay applies them in
	// that order whatever order they arrive in (0: not numbered, as an
	// earlier version sent them, or a task with no relay of its own).
	Seq int64 `json:"seq,omitempty"`
	// From, when set, is the first number the message stands for: it
	// carries the task's messages From to Seq (a state change followed by
	// a later message of the task, which carries the newer state).
	From int64 `json:"from,omitempty"`
}

// OutboxItem is one change waiting to leave for another relay.
type OutboxItem struct {
	// Seq orders the outbox; AckOutbox takes it.
	Seq int64
	// MsgID is the JetStream de-duplication id, fixed when the row was written.
	MsgID string
	// ToRelay is the id of the relay that must receive it.
	ToRelay string
	// TaskID is the task's id on this relay: the publisher keeps each
	// task's rows in order, one in flight at a time.
	TaskID string
	// Change is the body, built from the current state of the task.
	Change MeshChange
	// Version is the state of the task the body was built from, as
	// AckOutbox compares it: a task whose state changed since is sent again.
	Version string
	// Merged are the rows this one carries too: state rows of its task
	// just before it, whose state it carries (read at the same time).
	Merged []int64
}

// OutboxQuery says which outbox rows PendingOutbox returns: oldest first,
// up to Limit, those not in flight, of tasks not waiting for a retry, for
// relays trusted now. A task's rows are thus published in their order, and
// none before one of its rows that failed.
type OutboxQuery struct {
	Limit int
	// Skip are relays not trusted now: their rows wait.
	Skip []string
	// Busy are the rows in flight (published, not yet acknowledged).
	Busy []int64
	// Waiting are tasks whose last publish failed a moment ago: their rows
	// wait for the retry, the failed one first.
	Waiting []string
}

// ErrEarlierMissing is ApplyRemoteBatch's answer for a message that
// arrived before an earlier message of its task (Seq): it is not applied
// and is delivered again later, unless the caller forces it
// (RemoteApply.Force) because the earlier one is not coming.
var ErrEarlierMissing = errors.New("an earlier message of its task has not arrived yet")

// ApplyResult is what became of one message of ApplyRemoteBatch.
type ApplyResult struct {
	// Applied is false for a message applied before (recognised by its
	// id) and for one that failed.
	Applied bool
	// Err is a *MeshRefusal (refused for good), ErrEarlierMissing (deliver
	// it again later), or a store failure (deliver it again).
	Err error
}

// RemoteApply is one change received from another relay.
type RemoteApply struct {
	// MsgID is the sender's de-duplication id: a message applied once is
	// acknowledged again without changing anything.
	MsgID string
	// FromRelay is the id of the relay that sent it, FromName its name.
	FromRelay, FromName string
	// FromLabel is the label of its senders' qualified names (slug@label),
	// "" when the relay is named by its id here (RelayName; the mesh says
	// which relay a label belongs to).
	FromLabel string
	// SelfID and SelfName are this relay's id and name, SelfLabel its
	// label: a recipient named slug@SelfLabel or slug@SelfID is the local
	// agent slug.
	SelfID, SelfName, SelfLabel string
	// Mark is the signature mark (MarkVerified, MarkUnverified, MarkMismatch).
	Mark   string
	Change MeshChange
	// Force applies a message even though an earlier message of its task
	// has not arrived (ErrEarlierMissing): the earlier one was waited for
	// long enough. Applied later after all, an earlier message does not
	// take the task's state back.
	Force bool
}

// RemoteAgent is an agent another relay owns, as the directory lists it.
type RemoteAgent struct {
	Slug         string   `json:"slug"`
	DisplayName  string   `json:"displayName"`
	ModelSlug    string   `json:"modelSlug"`
	Capabilities []string `json:"capabilities"`
	Details      string   `json:"details,omitempty"`
	Kind         string   `json:"kind,omitempty"`
	Online       bool     `json:"online"`
	RelayID      string   `json:"relayId"`
	RelayName    string   `json:"relayName"`
	// RelayLabel is the label of its relay (qualified names, slug@label),
	// "" when the relay is named by its id here.
	RelayLabel string `json:"relayLabel,omitempty"`
}

// MeshName is the name by which this relay's agents address one agent of
// another relay: its plain slug, or slug@label, or slug@relay-id. A name is
// pinned to (RelayID, Slug) when it is first given and never moves by what
// the directory shows; only the operator gives a plain name to another
// relay (GivePlainName).
type MeshName struct {
	Name    string `json:"name"`
	RelayID string `json:"relayId"`
	Slug    string `json:"slug"`
}

// MeshContest is a slug that more than one holder shows: the plain name
// stays with its holder (HolderRelay; "" for an agent of this relay) and
// the others are known by their qualified names until the operator decides.
type MeshContest struct {
	Slug        string     `json:"slug"`
	HolderRelay string     `json:"holderRelay"`
	Others      []MeshName `json:"others"`
}

// RemoteNames is the outcome of SyncRemoteAgents: every remote name this
// relay has, and the contests among the agents the directory shows.
type RemoteNames struct {
	Names    []MeshName
	Contests []MeshContest
}

// NameChange is one placeholder renamed when a plain name changed hands:
// every task, journal entry and allowed-sender list that named From names To.
type NameChange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Relay admission states.
const (
	// RelayPending: seen, not yet approved; what it sends is held.
	RelayPending = "pending"
	// RelayTrusted: approved by the operator; its key is pinned.
	RelayTrusted = "trusted"
	// RelayBlocked: refused by the operator; what it sends is kept, marked
	// and never delivered.
	RelayBlocked = "blocked"
)

// MeshRelay is a relay this one has seen, with its admission state.
type MeshRelay struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// PublicKey is the pinned key ("" while none is known).
	PublicKey string `json:"publicKey"`
	// NewKey is a different key the directory now shows; set, the relay is
	// pending again until the operator trusts the new key.
	NewKey string `json:"newKey,omitempty"`
	// NewName is another name a trusted relay now shows; set, the relay is
	// pending again until the operator trusts it under that name.
	NewName   string `json:"newName,omitempty"`
	State     string `json:"state"`
	FirstSeen string `json:"firstSeen"`
	ChangedAt string `json:"changedAt,omitempty"`
}

// HeldEnvelope is an envelope kept but not applied: from a relay not
// trusted, or of a newer version than this build reads.
type HeldEnvelope struct {
	Seq           int64  `json:"seq"`
	MsgID         string `json:"msgId"`
	FromRelay     string `json:"fromRelay"`
	Reason        string `json:"reason"`
	TaskID        string `json:"taskId"`
	Title         string `json:"title"`
	SenderSlug    string `json:"senderSlug"`
	RecipientSlug string `json:"recipientSlug"`
	ReceivedAt    string `json:"receivedAt"`
	Data          []byte `json:"-"`
}

// MeshRefusal is a change from another relay that this relay refuses: it is
// not applied and not retried. Reason is a short word for the metric.
type MeshRefusal struct {
	Reason string
	Detail string
}

func (r *MeshRefusal) Error() string { return "refused (" + r.Reason + "): " + r.Detail }

// MeshStore is what the mesh needs from the store. Every method is one
// transaction; ApplyRemote commits before it returns, so the message may be
// acknowledged after it.
type MeshStore interface {
	// PendingOutbox returns the outbox rows to publish now, oldest first
	// (OutboxQuery).
	PendingOutbox(ctx context.Context, q OutboxQuery) ([]OutboxItem, error)
	// AckOutbox removes the rows NATS stored (sent); busy are the rows
	// still in flight. When a state row goes and its task changed since
	// the last of its rows was read (Version), with no row of the task
	// left unread to carry the change, a state row is written again, so
	// the change is sent.
	AckOutbox(ctx context.Context, sent []OutboxItem, busy []OutboxItem) error
	// OutboxHead is the seq of the newest row ever written: a row added
	// since has a greater one.
	OutboxHead(ctx context.Context) (int64, error)
	// OutboxDepth counts the rows not yet published.
	OutboxDepth(ctx context.Context) (int, error)
	// ApplyRemoteBatch stores changes from other relays idempotently (by
	// message id, task id and event id), in order in one transaction, and
	// wakes waiters: each in its own savepoint, so one that fails or is
	// refused is rolled back alone. It commits before it returns; each
	// result is final only when the error is nil (else nothing was
	// committed).
	ApplyRemoteBatch(ctx context.Context, ins []RemoteApply) ([]ApplyResult, error)
	// SyncRemoteAgents makes the local placeholders of remote agents match
	// the directory: an agent seen first is given a name (its plain slug if
	// no agent here has it, else slug@label, else slug@relay-id), one seen
	// before keeps its name and has its profile updated, and ones no longer
	// listed are kept (their tasks still name them). No name moves to
	// another relay. It returns every remote name and the contests.
	SyncRemoteAgents(ctx context.Context, agents []RemoteAgent) (RemoteNames, error)
	// PinnedName returns the name agent slug of relay relayID has here ("" if
	// none): its plain slug when it has it, else its qualified name.
	PinnedName(ctx context.Context, relayID, slug string) (string, error)
	// RenameRemoteAgent renames the placeholder name to newName, which no
	// agent may have, in every task, journal entry and worker's allowed
	// senders, so each reference keeps naming the same agent. It refuses a
	// name that is an agent of this relay. It returns the agents whose
	// workers' allowed senders changed: the worker manager must reload them.
	RenameRemoteAgent(ctx context.Context, name, newName string) (workers []string, err error)
	// LocalAgents returns this relay's own software agents, which it
	// advertises in the directory (no placeholders, no human operator).
	LocalAgents(ctx context.Context) ([]Agent, error)
	// RemoteRelayOf returns the id of the relay owning slug, "" when slug is local or unknown.
	RemoteRelayOf(ctx context.Context, slug string) (string, error)
	// PinRelayKey records key as relayID's public key the first time it is
	// seen and returns the pinned key.
	PinRelayKey(ctx context.Context, relayID, key string) (string, error)
	// TaskMark returns the signature mark of a remote task, "" for a local one.
	TaskMark(ctx context.Context, taskID string) (string, error)
	// PruneApplied forgets applied message ids older than age.
	PruneApplied(ctx context.Context, age time.Duration) (int, error)
	// SeeRelay records a relay seen in the directory or on an envelope: a new
	// one is pending (trusted when autoTrust), a first key is pinned, and a
	// key other than the pinned one puts a trusted relay back to pending
	// (changed reports that), as does another name (kept as NewName). A
	// blocked relay stays blocked.
	SeeRelay(ctx context.Context, id, name, key string, autoTrust bool) (r MeshRelay, changed bool, err error)
	// MeshRelays lists the relays seen, by name.
	MeshRelays(ctx context.Context) ([]MeshRelay, error)
	// SetRelayState trusts (pinning exactly key, the pinned or the new key
	// the operator approved, and the name it shows) or blocks a relay.
	// Blocking cancels its tasks that have not started (queued here).
	SetRelayState(ctx context.Context, id, state, key string) (MeshRelay, error)
	// ForgetPendingRelay deletes a relay's admission record if it is still
	// pending with no other key shown; true when it did.
	ForgetPendingRelay(ctx context.Context, id string) (bool, error)
	// HoldEnvelope keeps an envelope to apply later; false when it is held already.
	HoldEnvelope(ctx context.Context, h HeldEnvelope) (bool, error)
	// HeldEnvelopes returns up to limit held envelopes, oldest first, of
	// fromRelay ("" for every relay) and reason ("" for any).
	HeldEnvelopes(ctx context.Context, fromRelay, reason string, limit int) ([]HeldEnvelope, error)
	// HeldEnvelopesAfter is HeldEnvelopes from seq afterSeq on (exclusive):
	// a page after the last one read.
	HeldEnvelopesAfter(ctx context.Context, fromRelay, reason string, afterSeq int64, limit int) ([]HeldEnvelope, error)
	// DropHeld removes a held envelope once applied or refused.
	DropHeld(ctx context.Context, seq int64) error
}

// Mesh is the federation as the domain sees it; internal/mesh implements it.
type Mesh interface {
	// ClaimSlug takes slug for this relay across the mesh. A slug another
	// relay owns is refused with agent_exists naming that relay.
	ClaimSlug(ctx context.Context, slug string) error
	// ReleaseSlug gives up a slug this relay owns.
	ReleaseSlug(ctx context.Context, slug string) error
	// AgentRelay names the relay that owns slug: this relay's name for a local agent.
	AgentRelay(slug string) string
	// TaskMark returns the signature mark of a remote task, "" for a local one.
	TaskMark(ctx context.Context, taskID string) (string, error)
}

// MeshService is a Service joined to a mesh: slugs are claimed mesh-wide,
// agents carry their relay and remote tasks their signature mark. Remote
// routing itself happens in the store (outbox rows written in the same
// transaction as the task) and in the mesh (publisher, consumer).
type MeshService struct {
	Service
	Mesh Mesh
}

// WithMesh joins svc to m; a nil m returns svc unchanged.
func WithMesh(svc Service, m Mesh) Service {
	if m == nil {
		return svc
	}
	return &MeshService{Service: svc, Mesh: m}
}

func (s *MeshService) agent(a Agent) Agent {
	a.Relay = s.Mesh.AgentRelay(a.Slug)
	return a
}

func (s *MeshService) task(ctx context.Context, t Task, err error) (Task, error) {
	if err != nil {
		return t, err
	}
	mark, err := s.Mesh.TaskMark(ctx, t.ID)
	if err != nil {
		return t, err
	}
	t.Signature = mark
	return t, nil
}

// RegisterAgent claims the slug mesh-wide first.
func (s *MeshService) RegisterAgent(ctx context.Context, in RegisterInput) (Agent, error) {
	slug, err := NormalizeSlug("agentSlug", in.Slug)
	if err != nil {
		return Agent{}, err
	}
	if IsQualified(slug) {
		_, err := in.Validate() // refuses the @ with the registration's own message
		return Agent{}, err
	}
	if err := s.Mesh.ClaimSlug(ctx, slug); err != nil {
		return Agent{}, err
	}
	a, err := s.Service.RegisterAgent(ctx, in)
	return s.agent(a), err
}

// CreateAgent claims the slug mesh-wide first.
func (s *MeshService) CreateAgent(ctx context.Context, in CreateAgentInput) (Agent, string, error) {
	slug, err := NormalizeSlug("slug", in.Slug)
	if err != nil {
		return Agent{}, "", err
	}
	if IsQualified(slug) {
		_, err := in.Validate()
		return Agent{}, "", err
	}
	if err := s.Mesh.ClaimSlug(ctx, slug); err != nil {
		return Agent{}, "", err
	}
	a, tok, err := s.Service.CreateAgent(ctx, in)
	return s.agent(a), tok, err
}

// DeleteAgent releases the slug mesh-wide after the local delete.
func (s *MeshService) DeleteAgent(ctx context.Context, slug string) error {
	if err := s.Service.DeleteAgent(ctx, slug); err != nil {
		return err
	}
	return s.Mesh.ReleaseSlug(ctx, strings.ToLower(strings.TrimSpace(slug)))
}

// Heartbeat adds the agent's relay.
func (s *MeshService) Heartbeat(ctx context.Context, slug string) (Agent, error) {
	a, err := s.Service.Heartbeat(ctx, slug)
	return s.agent(a), err
}

// GetAgent adds the agent's relay.
func (s *MeshService) GetAgent(ctx context.Context, slug string) (Agent, error) {
	a, err := s.Service.GetAgent(ctx, slug)
	return s.agent(a), err
}

// ListAgents lists the whole mesh, each agent with its relay.
func (s *MeshService) ListAgents(ctx context.Context, includeOffline bool) ([]Agent, error) {
	as, err := s.Service.ListAgents(ctx, includeOffline)
	for i := range as {
		as[i] = s.agent(as[i])
	}
	return as, err
}

// GetTask adds the signature mark of a remote task.
func (s *MeshService) GetTask(ctx context.Context, requester, taskID string) (Task, error) {
	t, err := s.Service.GetTask(ctx, requester, taskID)
	return s.task(ctx, t, err)
}

// Task adds the signature mark of a remote task.
func (s *MeshService) Task(ctx context.Context, taskID string) (Task, error) {
	t, err := s.Service.Task(ctx, taskID)
	return s.task(ctx, t, err)
}

// MeshSettings are the mesh settings saved from the window's Settings page.
// They apply at the next relay start, and only when neither flags nor
// CROSSCHAT_NATS* variables name a mesh (those win).
type MeshSettings struct {
	// URLs are NATS server URLs (nats://, tls://, ws://, wss://).
	URLs []string `json:"urls"`
	// Creds, NKey and TLSCA are absolute paths of client credential files.
	Creds string `json:"creds"`
	NKey  string `json:"nkey"`
	TLSCA string `json:"tlsCa"`
	// Embed (HOST:PORT) runs a NATS server in the relay.
	Embed string `json:"embed"`
	// Name is this relay's name in the mesh; empty keeps the stored one.
	Name string `json:"name"`
	// Strict refuses to join with a NATS credential that can delete or
	// purge what the mesh keeps.
	Strict bool `json:"strict"`
}

// Enabled reports whether the settings name a mesh to join.
func (s MeshSettings) Enabled() bool { return len(s.URLs) > 0 || s.Embed != "" }
