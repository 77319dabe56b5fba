package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// presenceBook is what this process knows of its agents' presence beyond
// last_seen_at (relay.Presence): the push streams open now, when each
// agent's last stream closed, and what the mesh directory last said of
// the remote agents. It lives in memory only, as the streams do: after a
// restart nothing is open until the clients reconnect, and the window of
// each agent's last call decides meanwhile.
type presenceBook struct {
	mu      sync.Mutex
	streams map[string]int    // slug → push streams open
	closed  map[string]string // slug → last_seen_at when its last stream closed, or the operator created it
	remote  map[string]bool   // slug → online, as the mesh directory last said (nil: never synced)
}

// of returns slug's presence.
func (b *presenceBook) of(slug string) relay.Presence {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := relay.Presence{Streams: b.streams[slug], ClosedAt: b.closed[slug]}
	if on, ok := b.remote[slug]; ok {
		p.Directory = relay.Offline
		if on {
			p.Directory = relay.Online
		}
	}
	return p
}

// held lists the slugs a connection holds online (relay.Presence.Held),
// as a JSON array for json_each, so a query can take them in whatever
// their last-seen time.
func (b *presenceBook) held() string {
	b.mu.Lock()
	slugs := make([]string, 0, len(b.streams))
	for s := range b.streams {
		slugs = append(slugs, s)
	}
	for s, on := range b.remote {
		if on {
			slugs = append(slugs, s)
		}
	}
	b.mu.Unlock()
	sort.Strings(slugs)
	j, _ := json.Marshal(slugs) // a []string always marshals
	return string(j)
}

// add changes slug's open streams by n and returns how many are open now.
func (b *presenceBook) add(slug string, n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.streams == nil {
		b.streams = map[string]int{}
	}
	c := b.streams[slug] + n
	if c <= 0 {
		delete(b.streams, slug)
		return 0
	}
	b.streams[slug] = c
	return c
}

// left records that slug's last stream closed with last_seen_at set to ts.
func (b *presenceBook) left(slug, ts string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed == nil {
		b.closed = map[string]string{}
	}
	b.closed[slug] = ts
}

// forget drops what is known of a removed agent.
func (b *presenceBook) forget(slug string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.streams, slug)
	delete(b.closed, slug)
	delete(b.remote, slug)
}

// setRemote replaces what the directory says of the remote agents and
// returns the slugs whose word changed (online, offline or unsaid), each
// with whether it was or is online.
func (b *presenceBook) setRemote(online map[string]bool) map[string]bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := map[string]bool{}
	for s, on := range online {
		if was, ok := b.remote[s]; !ok || was != on {
			changed[s] = was || on
		}
	}
	for s, was := range b.remote {
		if _, ok := online[s]; !ok {
			changed[s] = was
		}
	}
	b.remote = online
	return changed
}

// StreamOpened records that slug's agent has one more push stream open:
// the agent is online until its last stream closes (relay.Presence), and
// seen now. Call done when the stream closes; it records the close (the
// last one's in the database: the agent was last seen then, and is offline
// from then on) and never fails the caller: a failed write is logged.
func (db *DB) StreamOpened(ctx context.Context, slug string) (done func(), err error) {
	slug, err = relay.NormalizeSlug("agentSlug", slug)
	if err != nil {
		return nil, err
	}
	db.book.add(slug, 1)
	err = db.write(ctx, "push stream opened", func(t *tx) error { return t.seenByStream(slug, false) })
	if err != nil {
		db.book.add(slug, -1)
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if db.book.add(slug, -1) > 0 {
				return
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			err := db.write(ctx, "push stream closed", func(t *tx) error { return t.seenByStream(slug, true) })
			if err != nil && !db.closed.Load() {
				db.log.Warn("store: record a closed push stream", "agent", slug, "err", err)
			}
		})
	}, nil
}

// seenByStream marks slug seen now by a push stream's open or, with
// closed, its last stream's close, and publishes the agent: its
// availability may have changed.
func (t *tx) seenByStream(slug string, closed bool) error {
	if n, err := t.execCount("see agent", `UPDATE agents SET last_seen_at = ? WHERE slug = ?`, t.ts, slug); err != nil {
		return err
	} else if n == 0 {
		return unknownAgent(slug)
	}
	if !closed {
		return t.agentChanged(slug)
	}
	// Before the agent is read for its change, so the change says offline.
	t.db.book.left(slug, t.ts)
	if err := t.agentChanged(slug); err != nil {
		return err
	}
	// Leaving does not count as a presence change published (seen's
	// throttle): the agent's next call, however soon, says it is back.
	t.agents = t.agents[:len(t.agents)-1]
	return nil
}

// countOnline counts the agents online now among those last seen after
// the window's start or held online by a connection.
func countOnline(ctx context.Context, q queryer, book *presenceBook, now time.Time) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT slug, last_seen_at FROM agents
		WHERE retired_at IS NULL AND (last_seen_at >= ? OR slug IN (SELECT value FROM json_each(?)))`,
		relay.FormatTime(now.Add(-relay.OnlineWindow)), book.held())
	if err != nil {
		return 0, fmt.Errorf("count online agents: %w", err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var slug, seen string
		if err := rows.Scan(&slug, &seen); err != nil {
			return 0, fmt.Errorf("count online agents: %w", err)
		}
		if book.of(slug).Availability(seen, now) == relay.Online {
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("count online agents: %w", err)
	}
	return n, nil
}
