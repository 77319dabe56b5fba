package relay_test

import (
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A slug or task id left out is said to be required, not refused by its
// format (an agent that forgot recipientSlug read that a slug must be 2–80
// characters); one given and malformed still gets the format.
func TestMissingSlugOrTaskIDIsRequired(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"slug left out", second(relay.NormalizeSlug("recipientSlug", "")), "recipientSlug: is required."},
		{"slug of spaces", second(relay.NormalizeSlug("recipientSlug", "  ")), "recipientSlug: is required."},
		{"slug malformed", second(relay.NormalizeSlug("recipientSlug", "-x")), "recipientSlug: must be 2–80 characters of lowercase letters, digits, dots, underscores, colons or hyphens, starting with a letter or digit."},
		{"task id left out", second(relay.TaskID("taskId", "")), "taskId: is required."},
		{"task id malformed", second(relay.TaskID("taskId", "nope")), "taskId: must be a task id (a UUID)."},
	} {
		if relay.ErrorCode(tc.err) != relay.EInvalidRequest || relay.ErrorMessage(tc.err) != tc.want {
			t.Errorf("%s: %v; want invalid_request %q", tc.name, tc.err, tc.want)
		}
	}
}

func second(_ string, err error) error { return err }
