package web

import (
	"net/http"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// statusByCode is the HTTP status each domain error code maps to at the
// REST and bridge edges.
var statusByCode = map[string]int{
	relay.EInvalidRequest:           http.StatusBadRequest,
	relay.EUnauthorized:             http.StatusUnauthorized,
	relay.EIdentityMismatch:         http.StatusForbidden,
	relay.ESlugRequired:             http.StatusBadRequest,
	relay.EUnknownAgent:             http.StatusNotFound,
	relay.EUnknownTask:              http.StatusNotFound,
	relay.EUnknownInvite:            http.StatusNotFound,
	relay.EUnknownWorker:            http.StatusNotFound,
	relay.ETaskAccessDenied:         http.StatusForbidden,
	relay.EChainLimit:               http.StatusConflict,
	relay.ESelfTask:                 http.StatusConflict,
	relay.ERecipientLacksCapability: http.StatusConflict,
	relay.ETaskUpdateDenied:         http.StatusConflict,
	relay.ETaskCancelDenied:         http.StatusForbidden,
	relay.ETaskRequeueDenied:        http.StatusForbidden,
	relay.ETaskChangesDenied:        http.StatusForbidden,
	relay.EInvalidTaskState:         http.StatusConflict,
	relay.EAgentExists:              http.StatusConflict,
	relay.EInvalidInvite:            http.StatusForbidden,
	relay.EInvalidAgentKind:         http.StatusConflict,
	relay.EOperatorProtected:        http.StatusConflict,
	relay.EAgentHasOpenTasks:        http.StatusConflict,
	relay.ETooManyOpenTasks:         http.StatusTooManyRequests,
	relay.EForbidden:                http.StatusForbidden,
	relay.ESessionNotFound:          http.StatusNotFound,
	relay.ESessionAmbiguous:         http.StatusConflict,
	relay.EInternal:                 http.StatusInternalServerError,
}

// HTTPStatus returns the HTTP status for err: the status of its domain code,
// 500 for any other error.
func HTTPStatus(err error) int {
	if s, ok := statusByCode[relay.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}
