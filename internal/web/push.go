package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Push stream parameters.
const (
	// DefaultPushHeartbeat spaces the heartbeat comments; proxies commonly
	// close connections idle for 60 s.
	DefaultPushHeartbeat = 20 * time.Second
	// pushHubBuffer is the hub's change subscription buffer.
	pushHubBuffer = 4096
)

// pushHub wakes push streams in process when a change for their agent
// commits. One broker subscription serves every stream, so a stream costs a
// goroutine, its connection and a timer, not a subscription buffer.
type pushHub struct {
	subscribe func(buffer int) (<-chan relay.Change, func())
	start     sync.Once
	waiters   relay.Waiters
}

// watch returns a channel closed at the next change for slug. Take it
// before reading, so no change is missed.
func (p *pushHub) watch(slug string) <-chan struct{} {
	p.start.Do(func() {
		ch, cancel := p.subscribe(pushHubBuffer)
		go p.run(ch, cancel)
	})
	return p.waiters.Watch(slug)
}

// run routes changes to watchers. When the broker drops the subscription
// (the hub fell behind) it subscribes again and wakes every stream, which
// then re-reads from its cursor: a wake-up may be spurious, never lost.
func (p *pushHub) run(ch <-chan relay.Change, cancel func()) {
	for {
		for c := range ch {
			switch {
			case c.Type == relay.ChangeTask && c.Task != nil:
				p.waiters.Wake(c.Task.RecipientSlug)
			case c.Type == relay.ChangeJournal && c.Event != nil:
				p.waiters.Wake(c.Event.RecipientSlug)
			}
		}
		cancel()
		ch, cancel = p.subscribe(pushHubBuffer)
		p.waiters.WakeAll()
	}
}

// servePush streams an agent's push events as server-sent events: each
// task queued for it and each journal update addressed to it, in order,
// starting after the cursor given as ?after=N or Last-Event-ID (without
// one, after the newest event: only what arrives from now on). Every event
// carries its sequence as the SSE id, so a client resumes exactly where it
// stopped, across reconnects and relay restarts. An agent's push events are
// written from the first time its stream is opened (OpenPush); a cursor
// from before that gets a missed event. The admin token names the agent
// with ?agent=slug (and gets the agent's whole stream: ?session= is
// ignored for it); an agent token streams its own agent.
func (h *handler) servePush(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if h.push == nil {
		writeError(w, http.StatusNotFound, "not_found", "This relay has no push stream.")
		return
	}
	p, ok := h.authenticateBearer(w, r, "push auth")
	if !ok {
		return
	}
	if p.RunTaskID != "" {
		// The stream carries all the agent's tasks and updates; a run's
		// token acts only on its run's task (internal/mcp/runscope.go).
		h.writeDomainError(w, r, "push", relay.Errorf(relay.EForbidden, "A worker run's token acts only on its run's task; the push stream is the whole agent's. Use the agent's own token.").
			WithDetails(map[string]any{"rule": "run_token_scope"}))
		return
	}
	live, after, err := pushRequest(r, p)
	if err == nil && p.Kind == relay.PrincipalAdmin {
		_, err = h.svc.GetAgent(r.Context(), live.AgentSlug)
	}
	if err != nil {
		h.writeDomainError(w, r, "push", err)
		return
	}
	slug := live.AgentSlug
	// From here on the agent's push events are written; before since they
	// were not, so an older cursor may have missed some.
	since, err := h.push.OpenPush(r.Context(), slug)
	if err != nil {
		h.writeDomainError(w, r, "push open", err)
		return
	}
	// No cursor starts from now. A cursor past the newest event is
	// another journal's (another relay's, or this one's before its data
	// was reset): it starts from the beginning, told it may have missed
	// some, rather than skip every event until the sequence passes it.
	newest, err := h.push.PushCursor(r.Context())
	if err != nil {
		h.writeDomainError(w, r, "push cursor", err)
		return
	}
	if after < 0 {
		after = newest
	} else if after > newest {
		after = 0
	}
	if p.Kind == relay.PrincipalAgent {
		// The agent's own stream holds it online while it is open; the
		// admin reading an agent's stream says nothing of the agent.
		done, err := h.push.StreamOpened(r.Context(), slug)
		if err != nil {
			h.writeDomainError(w, r, "push presence", err)
			return
		}
		defer done()
	}
	told := int64(-1)  // the cursor a missed event was last sent for
	var seen time.Time // when the stream's live session was last recorded
	if live.ID != "" {
		if err := h.push.SeeLiveSession(r.Context(), live); err != nil {
			h.writeDomainError(w, r, "push live session", err)
			return
		}
		seen = time.Now()
	}

	send := h.openEventStream(w, "push stream")
	ready, _ := json.Marshal(map[string]any{"agent": slug, "cursor": after})
	if !send("retry: 2000\nevent: %s\ndata: %s\n\n", relay.PushEventReady, ready) {
		return
	}
	beat := time.NewTicker(h.pushBeat)
	defer beat.Stop()
	for {
		woken := h.pushHub.watch(slug)
		batch, err := h.push.SessionPushEvents(r.Context(), live, after, relay.DefaultPushBatch)
		if err != nil {
			if r.Context().Err() == nil {
				h.log.Error("web: push stream: read", "agent", slug, "err", err)
			}
			return
		}
		// Once per cursor: with no newer events of its own, the agent's
		// cursor stays behind the trimmed or unwritten rows until one comes.
		if (batch.MayHaveMissed || after < since) && after != told {
			if !send("event: %s\ndata: {\"cursor\":%d}\n\n", relay.PushEventMissed, after) {
				return
			}
			told = after
		}
		for _, e := range batch.Events {
			name := relay.PushEventUpdate
			if e.IsTask() {
				name = relay.PushEventTask
			}
			b, err := json.Marshal(e)
			if err != nil {
				h.log.Error("web: push stream: encode", "err", err)
				return
			}
			if !send("id: %d\nevent: %s\ndata: %s\n\n", e.Sequence, name, b) {
				return
			}
		}
		after = batch.Cursor
		if batch.More {
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-woken:
		case <-beat.C:
			// The heartbeat keeps proxies from closing the stream; the
			// read that follows is a safety net behind the wake-ups.
			if !send(": heartbeat\n\n") {
				return
			}
			seen = h.seeLiveSession(r, live, seen)
		}
	}
}

// pushCursor reads ?after= or Last-Event-ID; -1 means neither was given.
func pushCursor(r *http.Request) (int64, error) {
	raw := strings.TrimSpace(r.URL.Query().Get("after"))
	if raw == "" {
		raw = strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	}
	if raw == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("after: must be a non-negative sequence number, not %q", raw)
	}
	return n, nil
}

// pushRequest reads what a push stream request asks for: the agent p acts
// as (?agent=slug for the admin token), the live session the stream is
// for (?session=ID and ?sessionName=NAME; no ID when it names none, or
// when p is the admin: only an agent's own token names a live session, as
// on /mcp, relay.NamesLiveSession), and the cursor (pushCursor). A
// malformed cursor or session is invalid_request.
func pushRequest(r *http.Request, p relay.Principal) (live relay.LiveSession, after int64, err error) {
	q := r.URL.Query()
	if live.AgentSlug, err = p.ActingSlug("agent", q.Get("agent")); err != nil {
		return live, 0, err
	}
	if live.ID, err = relay.LiveSessionID(relay.LiveSessionParam, q.Get(relay.LiveSessionParam)); err != nil {
		return live, 0, err
	}
	if live.Name, err = relay.LiveSessionName(relay.LiveSessionNameParam, q.Get(relay.LiveSessionNameParam)); err != nil {
		return live, 0, err
	}
	if after, err = pushCursor(r); err != nil {
		return live, 0, relay.Errorf(relay.EInvalidRequest, "%s", err.Error())
	}
	if !relay.NamesLiveSession(p) {
		live.ID, live.Name = "", ""
	}
	return live, after, nil
}

// liveSessionRefresh is how often an open push stream of a live session
// refreshes the session's record (on a heartbeat): its last-seen time and
// its stream's, which keeps it live for delivery while the stream is open
// (relay.LiveStreamWindow, 5 min, well above this plus a heartbeat).
const liveSessionRefresh = 2 * time.Minute

// seeLiveSession records the stream's live session again when it has one
// and last (the previous record) is liveSessionRefresh old, and returns the
// time of the latest record (last when there was nothing to do or the
// write failed, which is logged: the next heartbeat tries again).
func (h *handler) seeLiveSession(r *http.Request, live relay.LiveSession, last time.Time) time.Time {
	if live.ID == "" || time.Since(last) < liveSessionRefresh {
		return last
	}
	if err := h.push.SeeLiveSession(r.Context(), live); err != nil {
		if r.Context().Err() == nil {
			h.log.Error("web: push stream: record live session", "agent", live.AgentSlug, "session", live.ID, "err", err)
		}
		return last
	}
	return time.Now()
}
