package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// invitesCmd is `crosschat-relay invites create`.
func invitesCmd(args []string, stdout, stderr io.Writer) error {
	_, rest, err := verbAction("invites", args, "create")
	if err != nil {
		return err
	}
	return invitesCreate(rest, stdout, stderr)
}

// invitesCreate is `invites create`: a code and the message to paste.
func invitesCreate(args []string, stdout, stderr io.Writer) error {
	var in relay.InviteInput
	var expires time.Duration
	var ft relay.FirstTask
	c, err := parseCommand("invites create", args, stdout, stderr, func(fs *flag.FlagSet) {
		fs.IntVar(&in.MaxUses, "uses", 1, "how many agents may enroll with it; 0 for unlimited")
		fs.DurationVar(&expires, "expires", 24*time.Hour, "how long it is valid: 1h, 24h, 168h (at most 720h)")
		fs.StringVar(&in.DisplayName, "name", "", "display name given to the agent that enrolls (locked)")
		fs.StringVar(&in.Role, "role", "", "role given to the agent that enrolls (locked)")
		fs.StringVar(&in.Label, "label", "", "a note for yourself")
		fs.StringVar(&ft.Title, "first-task-title", "", "title of a task queued for each agent that enrolls")
		fs.StringVar(&ft.Instructions, "first-task-instructions", "", "instructions of that first task")
		fs.IntVar(&ft.Priority, "first-task-priority", 2, "priority of the first task: 1 low, 2 normal, 3 urgent")
	})
	if err != nil {
		return err
	}
	if expires <= 0 || expires.Hours() > relay.MaxInviteHours {
		// As typed, near enough: 0s, 90m, 1000h (%gh said "0h" for 0s).
		return fmt.Errorf("%w: invites create: --expires %s: an invite is valid for more than 0 and at most %dh", errUsage, durationText(expires), relay.MaxInviteHours)
	}
	in.ExpiresInHours = expires.Hours()
	if ft.Title != "" || ft.Instructions != "" {
		in.FirstTask = &ft
	}
	var out app.InviteCreated
	if done, err := c.fetch("Invites", "Create", &out, in); done || err != nil {
		return asFlagError("invites create", err, inviteFlags)
	}
	fmt.Fprintf(stdout, "Invite code: %s\n\nPaste this message into the agent's chat:\n\n%s", termSafe(out.Code), termSafeText(out.Message))
	return nil
}

// inviteFlags are the flags of `invites create` by the fields of the
// relay's refusals.
var inviteFlags = map[string]string{
	"maxUses": "--uses", "expiresInHours": "--expires", "displayName": "--name", "role": "--role", "label": "--label",
	"firstTask.title": "--first-task-title", "firstTask.instructions": "--first-task-instructions", "firstTask.priority": "--first-task-priority",
}

// asFlagError is err, a refusal of the relay naming one of flags' fields
// said as a usage error of that flag (the relay checks, in its words for
// the field; the verb names what was typed); any other err as it is.
func asFlagError(verb string, err error, flags map[string]string) error {
	var re *relay.Error
	if !errors.As(err, &re) || re.Code != relay.EInvalidRequest {
		return err
	}
	field, rest, _ := strings.Cut(re.Message, ": ")
	name, ok := flags[field]
	if !ok {
		return err
	}
	return fmt.Errorf("%w: %s: %s %s", errUsage, verb, name, rest)
}
