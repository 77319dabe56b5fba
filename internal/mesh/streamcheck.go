package mesh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// On an external cluster the first relay to connect creates the stream and
// the directory bucket (each relay's user may create them when missing),
// so they may have been made by a hostile relay, or by hand, otherwise than
// this relay makes them. Whoever made them, a relay says when they can
// lose what they keep or show it to others, not only when they let
// messages be deleted or purged: a stream that republishes its messages,
// takes other streams' or other subjects (the directory is readable by
// every relay), or drops messages before their recipient took them.

// streamRisks lists how a stream configured as have, where this relay
// would make want, can lose or leak what the relays send through it
// (nothing for a stream that differs only in what keeps more, or in how
// it is stored and replicated).
func streamRisks(have, want jetstream.StreamConfig) []string {
	var r []string
	if !have.DenyDelete {
		r = append(r, "lets messages be deleted")
	}
	if !have.DenyPurge {
		r = append(r, "can be purged")
	}
	if have.AllowRollup {
		r = append(r, "takes roll-ups (a purge through any subject)")
	}
	if h, w := slices.Sorted(slices.Values(have.Subjects)), slices.Sorted(slices.Values(want.Subjects)); !slices.Equal(h, w) {
		r = append(r, fmt.Sprintf("takes subjects %s, not %s", strings.Join(h, " "), strings.Join(w, " ")))
	}
	if have.RePublish != nil {
		r = append(r, fmt.Sprintf("republishes its messages to %s", have.RePublish.Destination))
	}
	if have.Mirror != nil || len(have.Sources) > 0 {
		r = append(r, "takes messages from other streams")
	}
	if have.SubjectTransform != nil {
		r = append(r, "rewrites the subjects of its messages")
	}
	if have.Retention != jetstream.LimitsPolicy {
		r = append(r, fmt.Sprintf("drops messages once consumed (%s retention)", have.Retention))
	}
	if have.MaxAge > 0 && (want.MaxAge <= 0 || have.MaxAge < want.MaxAge) {
		r = append(r, fmt.Sprintf("drops messages after %s, not %s", have.MaxAge, want.MaxAge))
	}
	if have.Discard == jetstream.DiscardOld && (have.MaxMsgs > 0 || have.MaxBytes > 0) {
		r = append(r, fmt.Sprintf("drops its oldest messages past %d messages or %d bytes", have.MaxMsgs, have.MaxBytes))
	}
	if want.MaxMsgsPerSubject <= 0 && have.MaxMsgsPerSubject > 0 && (have.Discard != jetstream.DiscardNew || !have.DiscardNewPerSubject) {
		r = append(r, fmt.Sprintf("drops a relay's oldest messages past %d", have.MaxMsgsPerSubject))
	}
	return r
}

// streamWarning says how stream have, which this relay may not change, can
// lose or leak messages; "" when it cannot.
func streamWarning(have, want jetstream.StreamConfig) string {
	risks := streamRisks(have, want)
	if len(risks) == 0 {
		return ""
	}
	return fmt.Sprintf("stream %s %s, and this relay may not change it: "+
		"remove it for the relays to make it again, or fix it with an admin credential (see `crosschat-relay mesh nats-config`)",
		have.Name, strings.Join(risks, ", "))
}

// strictStreams refuses, for --nats-strict, to join a cluster whose stream
// or directory bucket, made before this relay joined, can lose or leak
// messages. Missing ones are fine: this relay makes them as they must be.
// On its own embedded server the relay repairs them itself.
func (n *Node) strictStreams(ctx context.Context) error {
	if n.onOwnServer() || n.opts.Embed != "" {
		return nil
	}
	js, err := jetstream.New(n.nc)
	if err != nil {
		return fmt.Errorf("mesh: strict mode: jetstream: %w", err)
	}
	var warns []string
	for _, want := range []jetstream.StreamConfig{meshStreamConfig(n.opts.Replicas), dirStreamConfig(n.opts.Refresh, n.opts.Replicas)} {
		s, err := js.Stream(ctx, want.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			continue
		case err != nil:
			return fmt.Errorf("mesh: strict mode (--nats-strict) checks the stream %s before this relay joins, and could not read it: %w", want.Name, err)
		}
		if w := streamWarning(s.CachedInfo().Config, want); w != "" {
			warns = append(warns, w)
		}
	}
	if len(warns) > 0 {
		return fmt.Errorf("mesh: strict mode (--nats-strict): %s", strings.Join(warns, "; "))
	}
	return nil
}
