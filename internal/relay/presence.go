package relay

import "time"

// Presence (docs/live-sessions.md, "Presence"): an agent is online while
// it holds a connection the relay can see, and otherwise for OnlineWindow
// after the relay last heard from it.
//
//   - A push stream open on the agent's own relay (`monitor`, `channel`, a
//     live session: GET /api/push with the agent's own token) holds it
//     online until its last stream closes, however long that is.
//   - When the last stream closes the agent is offline at once, and stays
//     so until it is heard from again (an MCP call, a register, a worker's
//     heartbeat): closing is leaving, not a sign of life. An agent the
//     operator creates counts as closed at its creation: not heard from.
//   - An agent of another relay is online while that relay's entry in the
//     mesh directory says so.
//   - Anything else is online for OnlineWindow after its last call.
//
// The streams and the directory's word are known to the relay process only:
// after a restart no stream is open until the clients reconnect (monitor
// and channel do within seconds), and until then, and until the mesh's
// first read of the directory, the window of the last call decides.

// Presence is what the relay process knows of an agent's presence beyond
// its last-seen time.
type Presence struct {
	// Streams is how many push streams the agent has open on this relay now.
	Streams int
	// ClosedAt is the last-seen time written when the agent's last stream
	// closed ("" when none closed since the relay started).
	ClosedAt string
	// Directory is the mesh directory's word on a remote agent (Online or
	// Offline), "" when the directory has not told.
	Directory string
}

// Held reports whether a live connection holds the agent online, rather
// than the window of its last call: an open stream, or its relay's word.
func (p Presence) Held() bool {
	return p.Streams > 0 || p.Directory == Online
}

// Availability is Online or Offline for an agent last seen at lastSeen
// (TimeLayout), as of now, by the rules above.
func (p Presence) Availability(lastSeen string, now time.Time) string {
	switch {
	case p.Held():
		return Online
	case p.Directory != "":
		return Offline
	case p.ClosedAt != "" && lastSeen <= p.ClosedAt:
		return Offline
	case lastSeen >= FormatTime(now.Add(-OnlineWindow)):
		return Online
	}
	return Offline
}
