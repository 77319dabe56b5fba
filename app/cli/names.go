package cli

import (
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Project ids and agents' names share one namespace, the relay's. These
// say what holds a name that is not a project registered on this computer,
// so that neither register nor send takes one for the other without a word.

// describeAgent says what a is, for a person choosing whether to send it
// work or how to name a folder: the operator, another relay's agent, an
// agent that enrolled with an invite, a project folder registered
// elsewhere, or an agent made by hand. all is the relay's agent list (the
// operator in it names the local relay in a mesh).
func describeAgent(a relay.Agent, all []relay.Agent) string {
	local := ""
	for _, x := range all {
		if x.Kind == relay.KindHuman {
			local = x.Relay
		}
	}
	name := termSafe(a.DisplayName)
	switch {
	case a.Kind == relay.KindHuman:
		return "the operator (the person at the dashboard)"
	case a.Relay != "" && a.Relay != local:
		return fmt.Sprintf("an agent of the relay %s (“%s”), a remote one", termSafe(a.Relay), name)
	case a.Enrolled:
		return fmt.Sprintf("an invitee: an agent that enrolled with an invite (“%s”, model %s)", name, termSafe(a.ModelSlug))
	case a.ModelSlug == projectModel:
		return fmt.Sprintf("a project folder registered on another computer or by another user of this one (“%s”)", name)
	}
	return fmt.Sprintf("an agent made on the dashboard or with agents add (“%s”, model %s)", name, termSafe(a.ModelSlug))
}
