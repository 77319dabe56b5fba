package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// RecentBound is how many sessions per CLI a bounded lookup reads (the
// newest by file time): an any-session worker resolves names among them.
const RecentBound = 500

// idLen is the length of a session id (a UUID) at the end of a file name.
const idLen = 36

// file is one transcript file and the session id its name carries.
type file struct {
	id   string
	path string
	mod  time.Time
	size int64
}

// group is the files of one session (Codex may write several rollouts of
// one thread), oldest first.
type group struct {
	id    string
	files []file
}

func (g group) newest() time.Time { return g.files[len(g.files)-1].mod }

// files lists the transcript files of tool with the id their name carries
// (Claude Code: <id>.jsonl; Codex: rollout-<time>-<id>.jsonl).
func (st Store) files(ctx context.Context, tool string) ([]file, error) {
	var out []file
	add := func(path, id string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil // a link, a FIFO, a device: never read
		}
		out = append(out, file{id: id, path: path, mod: info.ModTime().UTC(), size: info.Size()})
		return nil
	}
	switch tool {
	case ClaudeCode:
		paths, err := filepath.Glob(filepath.Join(st.ClaudeProjects(), "*", "*.jsonl"))
		if err != nil {
			return nil, fmt.Errorf("list Claude Code sessions: %w", err)
		}
		for _, p := range paths {
			if err := add(p, strings.TrimSuffix(filepath.Base(p), ".jsonl")); err != nil {
				return nil, fmt.Errorf("list Claude Code sessions: %w", err)
			}
		}
	case Codex:
		err := filepath.WalkDir(filepath.Join(st.CodexHome(), "sessions"), func(path string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			name := d.Name()
			if d.IsDir() || !strings.HasPrefix(name, "rollout-") || !strings.HasSuffix(name, ".jsonl") {
				return nil
			}
			id := strings.TrimSuffix(name, ".jsonl")
			if len(id) >= len("rollout-")+idLen {
				id = id[len(id)-idLen:]
			} else {
				id = path // no id in the name: its own group, named by its meta line
			}
			return add(path, id)
		})
		if err != nil {
			return nil, fmt.Errorf("list Codex threads: %w", err)
		}
	default:
		return nil, fmt.Errorf("sessions: unknown tool %q (want %s or %s)", tool, ClaudeCode, Codex)
	}
	return out, nil
}

// groups gathers files by session id, newest session first.
func groups(files []file) []group {
	byID := map[string]int{}
	var out []group
	for _, f := range files {
		i, ok := byID[f.id]
		if !ok {
			i = len(out)
			byID[f.id] = i
			out = append(out, group{id: f.id})
		}
		out[i].files = append(out[i].files, f)
	}
	for i := range out {
		sort.SliceStable(out[i].files, func(a, b int) bool { return out[i].files[a].mod.Before(out[i].files[b].mod) })
	}
	sort.SliceStable(out, func(a, b int) bool {
		if !out[a].newest().Equal(out[b].newest()) {
			return out[a].newest().After(out[b].newest())
		}
		return out[a].id < out[b].id
	})
	return out
}

// Listing is a bounded listing of sessions.
type Listing struct {
	// Sessions are the sessions read, newest first.
	Sessions []Session
	// Beyond are the sessions past the bound, which were not read: only
	// their id, tool and (Codex) thread name are known.
	Beyond []Session
	// Bound is the bound per CLI (0: none).
	Bound int
}

// Recent lists the newest sessions of tool ("" for both), reading at most
// limit per CLI (0: all). Codex rollouts that share a thread id count as
// one session.
func (st Store) Recent(tool string, limit int) (Listing, error) {
	return st.recent(context.Background(), tool, limit)
}

// recent is Recent stopped by ctx.
func (st Store) recent(ctx context.Context, tool string, limit int) (Listing, error) {
	var tools []string
	switch tool {
	case "":
		tools = []string{ClaudeCode, Codex}
	case ClaudeCode, Codex:
		tools = []string{tool}
	default:
		return Listing{}, fmt.Errorf("sessions: unknown tool %q (want %s or %s)", tool, ClaudeCode, Codex)
	}
	l := Listing{Sessions: []Session{}, Bound: limit}
	for _, tl := range tools {
		files, err := st.files(ctx, tl)
		if err != nil {
			return Listing{}, err
		}
		var names map[string]string
		if tl == Codex {
			if names, err = codexNames(ctx, filepath.Join(st.CodexHome(), "session_index.jsonl")); err != nil {
				return Listing{}, err
			}
		}
		read := 0
		for _, g := range groups(files) {
			if limit > 0 && read >= limit {
				l.Beyond = append(l.Beyond, Session{Tool: tl, ID: g.id, Name: names[g.id], LastActive: g.newest(), Path: g.files[len(g.files)-1].path, grp: &g})
				continue
			}
			s, ok, err := readGroup(ctx, tl, g)
			if err != nil {
				return Listing{}, err
			}
			if !ok {
				continue
			}
			read++
			if tl == Codex {
				s.Name = names[s.ID]
			}
			l.Sessions = append(l.Sessions, s)
		}
	}
	sort.SliceStable(l.Sessions, func(i, j int) bool {
		if !l.Sessions[i].LastActive.Equal(l.Sessions[j].LastActive) {
			return l.Sessions[i].LastActive.After(l.Sessions[j].LastActive)
		}
		return l.Sessions[i].ID < l.Sessions[j].ID
	})
	return l, nil
}

// ByID reads the session of tool whose id is id, and only its files.
func (st Store) ByID(tool, id string) (Session, error) {
	if !ValidID(id) {
		return Session{}, &NotFoundError{Name: id}
	}
	files, err := st.files(context.Background(), tool)
	if err != nil {
		return Session{}, err
	}
	var mine []file
	for _, f := range files {
		if f.id == id || (tool == Codex && f.id == f.path) {
			mine = append(mine, f)
		}
	}
	for _, g := range groups(mine) {
		s, ok, err := readGroup(context.Background(), tool, g)
		if err != nil {
			return Session{}, err
		}
		if ok && s.ID == id {
			if tool == Codex {
				names, err := codexNames(context.Background(), filepath.Join(st.CodexHome(), "session_index.jsonl"))
				if err != nil {
					return Session{}, err
				}
				s.Name = names[s.ID]
			}
			return s, nil
		}
	}
	return Session{}, &NotFoundError{Name: id}
}
