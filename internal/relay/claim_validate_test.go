package relay_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestClaimInputValidate: a claim's input is normalized (recipient,
// senders, lease, via, session) or refused with the field it is wrong in;
// a live session's claim leaves the agent's other live sessions their tasks.
func TestClaimInputValidate(t *testing.T) {
	many := func(n int, s string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	tests := []struct {
		name string
		in   relay.ClaimInput
		want relay.ClaimInput
		err  string // a prefix of the message
	}{
		{"defaults", relay.ClaimInput{RecipientSlug: " Bob "},
			relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: relay.DefaultLeaseSeconds, Via: relay.ViaChat}, ""},
		{"a worker's", relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 120, Via: relay.ViaWorker, FromSenders: []string{"Ann"}, ForSessions: []string{"s-1"}},
			relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 120, Via: relay.ViaWorker, FromSenders: []string{"ann"}, ForSessions: []string{"s-1"}}, ""},
		{"no senders stays a filter", relay.ClaimInput{RecipientSlug: "bob", FromSenders: []string{}},
			relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: relay.DefaultLeaseSeconds, Via: relay.ViaChat, FromSenders: []string{}}, ""},
		{"a live session leaves the others", relay.ClaimInput{RecipientSlug: "bob", Session: " s-1 "},
			relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: relay.DefaultLeaseSeconds, Via: relay.ViaChat, Session: "s-1", LeaveLiveSessions: true}, ""},
		{"bad recipient", relay.ClaimInput{RecipientSlug: "b"}, relay.ClaimInput{}, "recipientSlug:"},
		{"short lease", relay.ClaimInput{RecipientSlug: "bob", LeaseSeconds: 5}, relay.ClaimInput{}, "leaseSeconds:"},
		{"bad via", relay.ClaimInput{RecipientSlug: "bob", Via: "mail"}, relay.ClaimInput{}, "via:"},
		{"too many senders", relay.ClaimInput{RecipientSlug: "bob", FromSenders: many(relay.MaxWorkerSenders+1, "ann")}, relay.ClaimInput{}, "fromSenders: at most"},
		{"a bad sender", relay.ClaimInput{RecipientSlug: "bob", FromSenders: []string{"ann", "!"}}, relay.ClaimInput{}, "fromSenders:"},
		{"too many sessions", relay.ClaimInput{RecipientSlug: "bob", ForSessions: many(relay.MaxClaimSessions+1, "s")}, relay.ClaimInput{}, "forSessions: at most"},
		{"a long session", relay.ClaimInput{RecipientSlug: "bob", ForSessions: []string{strings.Repeat("s", relay.MaxTargetSession+1)}}, relay.ClaimInput{}, "forSessions: an entry"},
		{"a bad live session", relay.ClaimInput{RecipientSlug: "bob", Session: "s 1"}, relay.ClaimInput{}, "session:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Validate()
			if tt.err != "" {
				if relay.ErrorCode(err) != relay.EInvalidRequest || !strings.HasPrefix(relay.ErrorMessage(err), tt.err) {
					t.Fatalf("err = %v, want invalid_request %q…", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
