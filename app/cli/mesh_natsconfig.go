package cli

import (
	"fmt"

	"github.com/crosschat/crosschat-relay/internal/mesh"
)

// meshNATSConfig prints, for an external NATS cluster, the users of this
// relay and of the relays it trusts, each confined to its own subjects:
// nats-server configuration to include, or with --json the same as data.
func meshNATSConfig(c *command) error {
	var cfg mesh.NATSConfig
	if done, err := c.fetch("Mesh", "NATSConfig", &cfg); done || err != nil {
		return err
	}
	// The text is made of relay names (from other relays) only inside
	// comments, kept on one line each; print it as written so it can be
	// saved to a file.
	fmt.Fprint(c.stdout, termSafeText(cfg.Text))
	return nil
}
