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
		// Bounded: an entry is a few KiB at most (details, capabilities),
		// so no client can fill the server's disk through the directory.
		MaxMsgSize:  maxDirEntry,
		MaxBytes:    maxDirBytes,
		Duplicates:  dup,
		AllowDirect: true,
		DenyDelete:  true,
		DenyPurge:   true,
	}
}

// sameStream reports whether have is cfg in every field cfg sets.
func sameStream(have, cfg jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, cfg.Subjects) && have.Storage == cfg.Storage && have.Retention == cfg.Retention &&
		have.Discard == cfg.Discard && have.Replicas == cfg.Replicas && have.MaxAge == cfg.MaxAge &&
		have.MaxMsgsPerSubject == cfg.MaxMsgsPerSubject && have.MaxMsgSize == cfg.MaxMsgSize && have.MaxBytes == cfg.MaxBytes &&
		have.Duplicates == cfg.Duplicates && have.AllowDirect == cfg.AllowDirect && have.AllowRollup == cfg.AllowRollup &&
		have.DenyDelete == cfg.DenyDelete && have.DenyPurge == cfg.DenyPurge && have.Description == cfg.Description
}

// safeStream reports whether a stream keeps what it holds whoever asks:
// no message deletion, no purge, no roll-up, not sealed or mirrored away.
func safeStream(have jetstream.StreamConfig) bool {
	return have.DenyDelete && have.DenyPurge && !have.AllowRollup
}

// ensureStream makes the stream cfg describes: created when missing,
// updated when it differs. A credential that may not update it (a relay's
// own, on an external cluster) leaves a differing stream as it is: warn
// says how, nil error, unless the stream does not keep what it holds.
func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (warn string, err error) {
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
		if _, uerr := js.UpdateStream(ctx, cfg); uerr != nil {
			warn = fmt.Sprintf("stream %s differs from this relay's settings and this relay may not update it (%v)", cfg.Name, uerr)
			if !safeStream(have) {
				warn += "; it lets messages be deleted or purged: create it as `crosschat-relay mesh nats-config` shows"
			}
			return warn, nil
		}
		return "", nil
	}
	return "", fmt.Errorf("create stream %s: it keeps being made and removed", cfg.Name)
}
