package session

import (
	"context"
	"sync"
	"time"
)

// maxCached bounds the parsed transcripts kept between lookups.
const maxCached = 4096

// parsed keeps what a transcript file held when it had a given time and
// size, so a lookup (one per post naming a session) reads again only the
// files that changed.
var parsed = struct {
	sync.Mutex
	m map[string]parsedFile
}{m: map[string]parsedFile{}}

type parsedFile struct {
	tool string
	mod  time.Time
	size int64
	s    Session
	user bool
}

// readFile reads one transcript file (user is false for a Codex thread a
// sub-agent started), from the cache while it is unchanged.
func readFile(ctx context.Context, tool string, f file) (s Session, user bool, err error) {
	parsed.Lock()
	c, ok := parsed.m[f.path]
	parsed.Unlock()
	if ok && c.tool == tool && c.mod.Equal(f.mod) && c.size == f.size {
		return c.s, c.user, nil
	}
	user = true
	if tool == ClaudeCode {
		s, err = readClaude(ctx, f.path)
	} else {
		s, user, err = readCodex(ctx, f.path)
	}
	if err != nil {
		return s, user, err
	}
	parsed.Lock()
	if len(parsed.m) >= maxCached {
		clear(parsed.m)
	}
	parsed.m[f.path] = parsedFile{tool: tool, mod: f.mod, size: f.size, s: s, user: user}
	parsed.Unlock()
	return s, user, nil
}
