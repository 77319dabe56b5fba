// Package session reads the agent CLIs' own session stores on this
// computer: Claude Code's transcripts (~/.claude/projects/<dir>/<id>.jsonl)
// and Codex's threads (~/.codex/sessions/**/rollout-*.jsonl, named in
// ~/.codex/session_index.jsonl). It lists sessions and finds one by id or
// by exact name, refusing ambiguous or unknown names with the candidates
// or similar names.
//
// It imports only the standard library.
package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Tools whose sessions are read (the relay's harness ids).
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
)

// maxLine bounds one transcript line that is parsed; longer lines (large
// tool outputs) are skipped.
const maxLine = 4 << 20

// maxTitle bounds a title derived from the first prompt (runes).
const maxTitle = 80

// Session is one Claude Code session or Codex thread.
type Session struct {
	Tool string `json:"tool"`
	ID   string `json:"id"`
	// Folder is the working folder the session ran in.
	Folder string `json:"folder"`
	// Name is the name a person gave it (Claude Code /rename, Codex thread
	// name); empty when it has none.
	Name string `json:"name,omitempty"`
	// Title is the generated title (or the first prompt, shortened).
	Title string `json:"title,omitempty"`
	// LastActive is the newest record's time (else the file's modification time).
	LastActive time.Time `json:"lastActive"`
	// Path is the transcript file (Codex: the newest rollout of the thread).
	Path string `json:"path"`
	// Paths are every transcript file of the session, oldest first, when
	// it has more than one (Codex rollouts sharing the thread's id).
	Paths []string `json:"-"`
	// grp is the files of a session past a listing's bound (not read yet).
	grp *group
	// keep is the folder check of the source that listed it past its bound.
	keep func(folder string) bool
}

// maxID bounds a session id's length.
const maxID = 128

// ValidID reports whether id can name a session on a CLI's command line:
// letters, digits, '-' and '_' (a UUID), not starting with '-' (never an
// option), at most maxID bytes.
func ValidID(id string) bool {
	if id == "" || len(id) > maxID || id[0] == '-' {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// files is every transcript file of s, oldest first.
func (s Session) files() []string {
	if len(s.Paths) > 0 {
		return s.Paths
	}
	return []string{s.Path}
}

// Named reports whether a person named the session.
func (s Session) Named() bool { return s.Name != "" }

// Label is the name, else the title.
func (s Session) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Title
}

// Store reads the session stores of one user.
type Store struct {
	// Home is the user's home folder (~).
	Home string
	// ClaudeDir is Claude Code's own folder, where CLAUDE_CONFIG_DIR puts
	// it; empty means Home/.claude.
	ClaudeDir string
	// CodexDir is Codex's own folder, where CODEX_HOME puts it; empty means
	// Home/.codex.
	CodexDir string
}

// ClaudeProjects is the folder of Claude Code's transcripts.
func (st Store) ClaudeProjects() string {
	dir := st.ClaudeDir
	if dir == "" {
		dir = filepath.Join(st.Home, ".claude")
	}
	return filepath.Join(dir, "projects")
}

// CodexHome is Codex's folder (its sessions and session_index.jsonl).
func (st Store) CodexHome() string {
	if st.CodexDir != "" {
		return st.CodexDir
	}
	return filepath.Join(st.Home, ".codex")
}

// List returns the sessions of tool ("" for both), newest first. Codex
// rollouts that share a thread id count as one session.
func (st Store) List(tool string) ([]Session, error) {
	l, err := st.Recent(tool, 0)
	return l.Sessions, err
}

// AmbiguousError refuses a name that matches more than one session.
type AmbiguousError struct {
	Name       string
	Candidates []Session
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d sessions are named “%s”; name one by id:", len(e.Candidates), e.Name)
	for _, c := range e.Candidates {
		kind := "named"
		if !c.Named() {
			kind = "generated title"
		}
		fmt.Fprintf(&b, "\n  %s %s  last active %s  (%s, %s)", c.Tool, c.ID, c.LastActive.Format(time.RFC3339), kind, c.Folder)
	}
	return b.String()
}

// NotFoundError refuses a name or id that matches no session.
type NotFoundError struct {
	Name    string
	Similar []string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("No session is named “%s” (names match exactly).", e.Name)
	if len(e.Similar) > 0 {
		msg += " Similar: “" + strings.Join(e.Similar, "”, “") + "”."
	}
	return msg
}

// Lookup finds the session of tool ("" for both) whose id is ref, or whose
// name (else generated title) is exactly ref. Several matches are an
// *AmbiguousError with the candidates, none a *NotFoundError with similar
// names.
func (st Store) Lookup(tool, ref string) (Session, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Session{}, errors.New("sessions: give a session id or name")
	}
	all, err := st.List(tool)
	if err != nil {
		return Session{}, err
	}
	for _, s := range all {
		if s.ID == ref {
			return s, nil
		}
	}
	var hits []Session
	for _, s := range all {
		if s.Name == ref {
			hits = append(hits, s)
		}
	}
	if len(hits) == 0 { // a generated title counts only when no person's name matches
		for _, s := range all {
			if !s.Named() && s.Title == ref {
				hits = append(hits, s)
			}
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		return Session{}, &NotFoundError{Name: ref, Similar: similar(ref, all)}
	}
	return Session{}, &AmbiguousError{Name: ref, Candidates: hits}
}

// similar returns up to five labels close to ref: containing it or it
// containing them (case-insensitively), or a few edits away.
func similar(ref string, all []Session) []string {
	labels := make([]string, len(all))
	for i, s := range all {
		labels[i] = s.Label()
	}
	return relay.Similar(ref, labels, strings.ToLower, 5)
}

// maxFile bounds the bytes read of one transcript file; the rest is not
// read.
const maxFile = 64 << 20

// errNotRegular refuses a transcript that is not a regular file (a link,
// a FIFO, a device).
var errNotRegular = errors.New("not a regular file")

// openRegular opens path for reading only when it is a regular file: a
// symbolic link is not followed and a FIFO is not waited on.
func openRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// eachLine calls fn with each line of the file (a regular file, at most
// its first maxFile bytes) that is at most maxLine bytes; longer lines are
// skipped. fn returns false to stop; so does ctx, with its error.
func eachLine(ctx context.Context, path string, fn func([]byte) bool) error {
	f, _, err := openRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, maxFile), 64<<10)
	var line []byte
	tooLong := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk, isPrefix, err := r.ReadLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > maxLine {
				tooLong, line = true, line[:0]
			}
		}
		if isPrefix {
			continue
		}
		if !tooLong && len(line) > 0 {
			if !fn(line) {
				return nil
			}
		}
		line, tooLong = line[:0], false
	}
}

// maxLabel bounds a name or title read from a transcript (runes).
const maxLabel = 200

// cleanLabel makes a name or title read from a transcript safe to show:
// one line, no control characters, at most maxLabel runes.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxLabel {
		s = string([]rune(s)[:maxLabel-1]) + "…"
	}
	return s
}

// shortTitle makes a one-line title of a prompt.
func shortTitle(s string) string {
	s = cleanLabel(s)
	if utf8.RuneCountInString(s) <= maxTitle {
		return s
	}
	return string([]rune(s)[:maxTitle-1]) + "…"
}

// parseTime reads an RFC 3339 timestamp; zero when it is not one.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

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

// readGroup reads the files of one session and merges them: one session
// however many rollouts it has. ok is false for what is not listed (no
// id, a Codex thread a sub-agent started).
func readGroup(ctx context.Context, tool string, g group) (s Session, ok bool, err error) {
	for _, f := range g.files {
		part, user, err := readFile(ctx, tool, f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Session{}, false, fmt.Errorf("read %s session %s: %w", tool, f.path, err)
		}
		if !user || !ValidID(part.ID) {
			return Session{}, false, nil
		}
		if s.ID == "" {
			s = part
			s.Paths = nil
		}
		if part.Name != "" {
			s.Name = part.Name // the newest name wins
		}
		if s.Title == "" {
			s.Title = part.Title
		}
		if s.Folder == "" {
			s.Folder = part.Folder
		}
		if part.LastActive.After(s.LastActive) {
			s.LastActive = part.LastActive
		}
		s.Path = part.Path
		s.Paths = append(s.Paths, part.Path)
	}
	if len(s.Paths) < 2 {
		s.Paths = nil
	}
	return s, s.ID != "", nil
}

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
