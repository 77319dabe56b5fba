package relay

import "context"

// PrincipalKind tells the admin token from agent and run tokens.
type PrincipalKind string

// Principal kinds.
const (
	PrincipalAdmin PrincipalKind = "admin"
	PrincipalAgent PrincipalKind = "agent"
)

// Principal is who a request acts for.
type Principal struct {
	Kind PrincipalKind `json:"kind"`
	// Slug is the agent's slug; empty for the admin.
	Slug string `json:"slug,omitempty"`
	// RunTaskID is set for a worker run token: the task being run.
	RunTaskID string `json:"runTaskId,omitempty"`
}

// Admin is the principal of the admin token.
var Admin = Principal{Kind: PrincipalAdmin}

// ActingSlug resolves the slug a call acts as. field names the argument
// (e.g. "senderSlug") and supplied is its raw value, possibly empty.
//
// An agent token acts as its own slug; naming another slug is
// identity_mismatch. The admin token may act as anyone but must name the
// slug: a missing one is slug_required.
func (p Principal) ActingSlug(field, supplied string) (string, error) {
	var norm string
	if supplied != "" {
		s, err := NormalizeSlug(field, supplied)
		if err != nil {
			return "", err
		}
		norm = s
	}
	if p.Kind == PrincipalAdmin {
		if norm == "" {
			return "", Errorf(ESlugRequired, "%s is required when using the admin token.", field).
				WithDetails(map[string]any{"field": field})
		}
		return norm, nil
	}
	if norm != "" && norm != p.Slug {
		return "", Errorf(EIdentityMismatch, "This token belongs to “%s”; it cannot act as “%s”. Omit %s or use your own slug.", p.Slug, norm, field).
			WithDetails(map[string]any{"tokenSlug": p.Slug, field: norm})
	}
	return p.Slug, nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p; the HTTP auth layer sets it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal set by WithPrincipal.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

type operatorKey struct{}

// ByOperator marks ctx as an action the operator takes from the dashboard or
// CLI on an agent's behalf (cancel, requeue, request changes as the task's
// sender). Such actions do not refresh the acting agent's presence, so an
// offline agent never looks online because of what the operator did, and
// their reports and summaries say "(via dashboard)".
func ByOperator(ctx context.Context) context.Context {
	return context.WithValue(ctx, operatorKey{}, true)
}

// IsByOperator reports whether ctx was marked with ByOperator.
func IsByOperator(ctx context.Context) bool {
	v, _ := ctx.Value(operatorKey{}).(bool)
	return v
}
