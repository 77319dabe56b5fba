package mesh

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The two things the mesh keeps in JetStream: the stream of envelopes and
// the directory bucket (a KV bucket, made here as its stream so that it can
// refuse deletion and purge). Both refuse message deletion and purge
// whoever asks, and neither takes roll-ups (a roll-up of all subjects
// would purge the bucket through any key a relay may write).

// meshStreamConfig is the stream of envelopes.
func meshStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Crosschat Relay mesh: envelopes between relays",
		Subjects:    []string{subjectPrefix + ">"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Replicas:    replicas,
		MaxAge:      streamMaxAge,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		Duplicates:  10 * time.Minute,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// dirConsumerIdle is how long a consumer of the directory's stream may be
// idle (no watcher listening, no pull) before the server removes it: the
// same for every relay, so none changes the stream back and forth (a
// stream's bound cannot be lowered below a consumer's). A variable for
// tests.
var dirConsumerIdle = 2 * time.Minute

// dirStreamConfig is the directory bucket's stream, laid out as
// nats.go's KeyValue expects (one value a key, direct gets), with entries
// living 3×refresh.
func dirStreamConfig(refresh time.Duration, replicas int) jetstream.StreamConfig {
	ttl := 3 * refresh
	dup := 2 * time.Minute
	if ttl < dup {
		dup = ttl
	}
	return jetstream.StreamConfig{
		Name:              dirStream,
		Description:       "Crosschat Relay mesh directory: relays and agents",
		Subjects:          []string{dirSubjectPrefix + ">"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardNew,
		Replicas:          replicas,
		MaxAge:            ttl,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		// Relays may make consumers here (a watch of the directory is
		// one), durable ones too: none outlives dirConsumerIdle idle, so
		// what a relay makes and leaves does not pile up for good.
		ConsumerLimits: jetstream.StreamConsumerLimits{InactiveThreshold: dirConsumerIdle},
		// Bounded: an entry is a few KiB at most (details, capabilities),
		// so no client can fill the server's disk through the directory.
		MaxMsgSize: maxDirEntry,
		MaxBytes:   maxDirBytes,
		Duplicates: dup,
		// No direct gets: one answers with the stream's rights to any
		// subject its asker names (dirpoll.go).
		AllowDirect: false,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// sameStream reports whether have is cfg in every field cfg sets (a limit
// of 0 or below is no limit, as the server writes it).
func sameStream(have, cfg jetstream.StreamConfig) bool {
	limit := func(v int64) int64 { return max(v, 0) }
	return slices.Equal(have.Subjects, cfg.Subjects) && have.Storage == cfg.Storage && have.Retention == cfg.Retention &&
		have.Discard == cfg.Discard && have.Replicas == cfg.Replicas && have.MaxAge == cfg.MaxAge &&
		limit(have.MaxMsgsPerSubject) == limit(cfg.MaxMsgsPerSubject) && limit(int64(have.MaxMsgSize)) == limit(int64(cfg.MaxMsgSize)) &&
		limit(have.MaxBytes) == limit(cfg.MaxBytes) && limit(have.MaxMsgs) == limit(cfg.MaxMsgs) &&
		have.Duplicates == cfg.Duplicates && have.AllowDirect == cfg.AllowDirect && have.AllowRollup == cfg.AllowRollup &&
		have.DenyDelete == cfg.DenyDelete && have.DenyPurge == cfg.DenyPurge && have.Description == cfg.Description &&
		have.ConsumerLimits == cfg.ConsumerLimits
}

// ensureStream makes the stream cfg describes: created when missing,
// updated when it differs and mayUpdate. A differing stream it may not
// update (a relay's own credential: the relay that embeds NATS, or the
// cluster's operator, sets it up) is left as it is, and warn says how it
// can lose or leak what it keeps (streamRisks).
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, mayUpdate bool) (warn string, err error) {
	for range 3 {
		s, err := js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if _, err = js.CreateStream(ctx, cfg); errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue // another relay made it meanwhile: look again
			}
			if err != nil {
				return "", fmt.Errorf("create stream %s: %w", cfg.Name, err)
			}
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("look up stream %s: %w", cfg.Name, err)
		}
		have := s.CachedInfo().Config
		if sameStream(have, cfg) {
			return "", nil
		}
		if !mayUpdate {
			return streamWarning(have, cfg), nil // "" when set up otherwise but safely: its settings rule
		}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			if len(streamRisks(have, cfg)) == 0 {
				// Safe as it is (the server refuses a bound below what a
				// consumer made before asks, say): used as it is, not
				// retried for ever.
				return fmt.Sprintf("stream %s could not be brought to this relay's settings (%v); it is used as it is", cfg.Name, err), nil
			}
			return "", fmt.Errorf("update stream %s: %w", cfg.Name, err)
		}
		return "", nil
	}
	return "", fmt.Errorf("create stream %s: it keeps being made and removed", cfg.Name)
}

// consumerConfig is relay id's durable consumer of the stream: pulled, its
// own subject only.
func consumerConfig(id string, replicas int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       consumerName(id),
		Description:   "Crosschat Relay " + id,
		FilterSubject: subject(id),
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		// Many out at once, applied in batches (consume.go); a task's
		// messages are applied in their order by their numbers.
		MaxAckPending: consumeWindow,
		AckWait:       ackWait,
		MaxDeliver:    -1,
		Replicas:      replicas,
	}
}

// relayConsumers makes the consumer of each relay of ids that has none,
// through the embedded server's privileged connection, before the relay
// is let in. A relay may make its own consumer (an external cluster has
// no one else to), and one it made first could push its messages, the
// relays' own included, to any subject of the account with the server's
// rights: made here first, its consumer is pulled, which no update can
// turn, and a relay here may not change it. One found pushing (made before
// this was done) is made again; one pulled is set as this version makes it.
func (n *Node) relayConsumers(ids []string) error {
	ctx, cancel := context.WithTimeout(n.ctx, 4*opTimeout)
	defer cancel()
	js, err := jetstream.New(n.admin)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	if _, err := js.Stream(ctx, StreamName); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil // made with the stream, at setup
	}
	for _, id := range ids {
		_, err := js.Consumer(ctx, StreamName, consumerName(id))
		switch {
		case err == nil:
			// Pulled: set as this version makes it (a bound changed, or
			// an idle time set to have it removed).
			if _, err := js.CreateOrUpdateConsumer(ctx, StreamName, consumerConfig(id, n.opts.Replicas)); err != nil {
				return fmt.Errorf("set the consumer of relay %s: %w", id, err)
			}
			continue
		case errors.Is(err, jetstream.ErrNotPullConsumer):
			if err := js.DeleteConsumer(ctx, StreamName, consumerName(id)); err != nil {
				return fmt.Errorf("remove the pushing consumer of relay %s: %w", id, err)
			}
		case !errors.Is(err, jetstream.ErrConsumerNotFound):
			return fmt.Errorf("look up the consumer of relay %s: %w", id, err)
		}
		if _, err := js.CreateConsumer(ctx, StreamName, consumerConfig(id, n.opts.Replicas)); err != nil {
			return fmt.Errorf("make the consumer of relay %s: %w", id, err)
		}
	}
	return nil
}
