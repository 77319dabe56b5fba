package relay

import "context"

// FirstTask is a task queued for each agent that enrolls with an invite.
type FirstTask struct {
	Title        string `json:"title"`
	Instructions string `json:"instructions"`
	Priority     int    `json:"priority"`
}

// Invite lets agents enroll themselves with a one-time code.
type Invite struct {
	ID        string `json:"id"`
	Label     string `json:"label,omitempty"`
	CreatedAt string `json:"createdAt"`
	ExpiresAt string `json:"expiresAt"`
	// MaxUses is 0 for unlimited.
	MaxUses     int        `json:"maxUses,omitempty"`
	Uses        int        `json:"uses"`
	Revoked     bool       `json:"revoked"`
	Active      bool       `json:"active"`
	Agents      []string   `json:"agents"`
	DisplayName string     `json:"displayName,omitempty"`
	Role        string     `json:"role,omitempty"`
	FirstTask   *FirstTask `json:"firstTask,omitempty"`
}

// InviteInput creates an invite.
type InviteInput struct {
	Label string `json:"label,omitempty"`
	// ExpiresInHours is in (0, 720]; fractions are allowed.
	ExpiresInHours float64 `json:"expiresInHours"`
	// MaxUses is 1..1000, or 0 for unlimited.
	MaxUses     int        `json:"maxUses,omitempty"`
	DisplayName string     `json:"displayName,omitempty"`
	Role        string     `json:"role,omitempty"`
	FirstTask   *FirstTask `json:"firstTask,omitempty"`
}

// EnrollInput is the body of POST /api/enroll.
type EnrollInput struct {
	Invite       string   `json:"invite"`
	Slug         string   `json:"slug"`
	DisplayName  string   `json:"displayName"`
	ModelSlug    string   `json:"modelSlug"`
	Capabilities []string `json:"capabilities"`
	Details      string   `json:"details,omitempty"`
}

// AssignedTask names the first task queued by an invite.
type AssignedTask struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Priority int    `json:"priority"`
}

// Enrollment is what an enrolled agent receives.
type Enrollment struct {
	Agent        Agent         `json:"agent"`
	Token        string        `json:"token"`
	AssignedTask *AssignedTask `json:"assignedTask,omitempty"`
}

// InviteService manages invites and enrollment.
type InviteService interface {
	// CreateInvite returns the invite and its code (shown once). Errors: invalid_request.
	CreateInvite(ctx context.Context, in InviteInput) (Invite, string, error)
	// ListInvites returns invites, newest first.
	ListInvites(ctx context.Context) ([]Invite, error)
	// RevokeInvite revokes an invite; repeating it is harmless. Errors: unknown_invite.
	RevokeInvite(ctx context.Context, id string) (Invite, error)
	// Enroll creates an agent from an invite in one transaction. A refused
	// enrollment consumes no use. Errors: invalid_request, invalid_invite, agent_exists.
	Enroll(ctx context.Context, in EnrollInput) (Enrollment, error)
}
