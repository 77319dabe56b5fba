package web_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Ensures each domain error code answers with its HTTP status, wrapped or
// not, and anything else with 500.
func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{relay.Errorf(relay.EInvalidRequest, "x"), http.StatusBadRequest},
		{relay.Errorf(relay.EUnauthorized, "x"), http.StatusUnauthorized},
		{relay.Errorf(relay.EIdentityMismatch, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ESlugRequired, "x"), http.StatusBadRequest},
		{relay.Errorf(relay.EUnknownAgent, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownTask, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownInvite, "x"), http.StatusNotFound},
		{relay.Errorf(relay.EUnknownWorker, "x"), http.StatusNotFound},
		{relay.Errorf(relay.ETaskAccessDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EChainLimit, "x"), http.StatusConflict},
		{relay.Errorf(relay.ERecipientLacksCapability, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETaskUpdateDenied, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETaskCancelDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ETaskRequeueDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.ETaskChangesDenied, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EInvalidTaskState, "x"), http.StatusConflict},
		{relay.Errorf(relay.EAgentExists, "x"), http.StatusConflict},
		{relay.Errorf(relay.EInvalidInvite, "x"), http.StatusForbidden},
		{relay.Errorf(relay.EInvalidAgentKind, "x"), http.StatusConflict},
		{relay.Errorf(relay.EOperatorProtected, "x"), http.StatusConflict},
		{relay.Errorf(relay.EAgentHasOpenTasks, "x"), http.StatusConflict},
		{relay.Errorf(relay.ETooManyOpenTasks, "x"), http.StatusTooManyRequests},
		{relay.Errorf(relay.EInternal, "x"), http.StatusInternalServerError},
		{fmt.Errorf("store: %w", relay.Errorf(relay.EUnknownTask, "x")), http.StatusNotFound},
		{relay.Errorf("some_new_code", "x"), http.StatusInternalServerError},
		{errors.New("disk full"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := web.HTTPStatus(tt.err); got != tt.want {
				t.Fatalf("HTTPStatus = %d, want %d", got, tt.want)
			}
		})
	}
}
