package relay

import (
	"errors"
	"fmt"
)

// Error codes. They are part of the wire protocol: agents match on them.
const (
	EInvalidRequest           = "invalid_request"
	EUnauthorized             = "unauthorized"
	EIdentityMismatch         = "identity_mismatch"
	ESlugRequired             = "slug_required"
	EUnknownAgent             = "unknown_agent"
	EUnknownTask              = "unknown_task"
	EUnknownInvite            = "unknown_invite"
	ETaskAccessDenied         = "task_access_denied"
	EChainLimit               = "chain_limit"
	ESelfTask                 = "self_task_refused"
	ERecipientLacksCapability = "recipient_lacks_capability"
	ETaskUpdateDenied         = "task_update_denied"
	ETaskCancelDenied         = "task_cancel_denied"
	ETaskRequeueDenied        = "task_requeue_denied"
	ETaskChangesDenied        = "task_changes_denied"
	EInvalidTaskState         = "invalid_task_state"
	EAgentExists              = "agent_exists"
	EInvalidInvite            = "invalid_invite"
	EInvalidAgentKind         = "invalid_agent_kind"
	EOperatorProtected        = "operator_protected"
	EAgentHasOpenTasks        = "agent_has_open_tasks"
	ETooManyOpenTasks         = "too_many_open_tasks"
	// EForbidden refuses a call the caller's token may not make at all,
	// such as a worker run's token acting beyond its run's task.
	EForbidden = "forbidden"
	EInternal  = "internal_error"
)

// Error is a domain error with a stable code, a message meant for the agent or
// person who caused it, and optional structured details.
type Error struct {
	Code    string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns a new *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithDetails returns e with details set; it is meant for chaining on Errorf.
func (e *Error) WithDetails(details map[string]any) *Error {
	e.Details = details
	return e
}

// ErrorCode returns the code of err if it is (or wraps) an *Error, and
// EInternal otherwise. A nil error has no code.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the message of err if it is (or wraps) an *Error; for
// any other error it returns a generic message, so internals never leak.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "The relay could not complete this request."
}

// AsError converts any error into an *Error suitable for a response body:
// domain errors pass through, anything else becomes internal_error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: EInternal, Message: ErrorMessage(err)}
}

// IsDomain reports whether err is (or wraps) an *Error, i.e. an expected
// refusal rather than a failure of the relay itself.
func IsDomain(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
