package app_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// writeClaudeSession writes a Claude Code transcript under home that ran in
// folder, named name by a person ("" for none).
func writeClaudeSession(t *testing.T, home, folder, id, name, at string) {
	t.Helper()
	lines := []string{
		`{"type":"user","message":{"role":"user","content":"Tidy the release notes."},"timestamp":"` + at + `","cwd":` + strconv.Quote(folder) + `,"sessionId":"` + id + `"}`,
		`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]},"timestamp":"` + at + `","cwd":` + strconv.Quote(folder) + `,"sessionId":"` + id + `"}`,
	}
	if name != "" {
		lines = append(lines, `{"type":"custom-title","customTitle":`+strconv.Quote(name)+`,"sessionId":"`+id+`"}`)
	}
	dir := filepath.Join(home, ".claude", "projects", strings.ReplaceAll(folder, "/", "-"))
	noErr(t, os.MkdirAll(dir, 0o700))
	noErr(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600))
}

// The sessions of threeSessions.
const (
	sessA = "5e55a0b1-0000-4000-8000-00000000000a"
	sessB = "5e55a0b1-0000-4000-8000-00000000000b"
	sessC = "5e55a0b1-0000-4000-8000-00000000000c"
)

// threeSessions makes a home folder (HOME) with three Claude Code
// sessions: sessA and sessB both named "release prep" in work, sessC
// "docs pass" in other; program is a stand-in claude.
func threeSessions(t *testing.T) (home, work, other, program string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	work, other = filepath.Join(home, "work"), filepath.Join(home, "other")
	for _, d := range []string{work, other} {
		noErr(t, os.Mkdir(d, 0o755))
	}
	writeClaudeSession(t, home, work, sessA, "release prep", "2026-11-30T10:00:00Z")
	writeClaudeSession(t, home, work, sessB, "release prep", "2026-11-30T11:00:00Z")
	writeClaudeSession(t, home, other, sessC, "docs pass", "2026-11-30T12:00:00Z")
	program = filepath.Join(home, "claude")
	noErr(t, os.WriteFile(program, []byte("#!/bin/sh\n"), 0o755))
	return home, work, other, program
}

// Ensure a worker is bound to a session by id or exact name when it is
// saved (from the command line and the service): a name two sessions share
// is refused with the candidates, an unknown name with similar ones, a
// session from another folder is refused, and the picker lists the
// folder's sessions.
func TestWorkerBindsSession(t *testing.T) {
	_, work, other, program := threeSessions(t)
	const a, b, c = sessA, sessB, sessC

	r := startRelay(t)
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	if _, errs, code := run(t, append([]string{"agents", "add", "builder", "--name", "Builder", "--model", "claude", "--capability", "file-system"}, loc...)...); code != 0 {
		t.Fatalf("agents add: %s", errs)
	}
	set := func(session string) (string, string, int) {
		return run(t, append([]string{"workers", "set", "builder", "--harness", "claude-code", "--command", program, "--workdir", work, "--session", session}, loc...)...)
	}

	_, errs, code := set("release prep")
	if code == 0 || !strings.Contains(errs, "2 sessions are named “release prep”") || !strings.Contains(errs, a) || !strings.Contains(errs, b) {
		t.Fatalf("an ambiguous name: exit %d, %s; want refused with both candidates", code, errs)
	}
	_, err := r.Services.Workers.Save(relay.WorkerConfig{AgentSlug: "builder", Harness: "claude-code", Command: program, Workdir: work,
		AllowedSenders: []string{"operator"}, Enabled: true, Session: "release prep"})
	var derr *relay.Error
	if relay.ErrorCode(err) != relay.EInvalidRequest || !errors.As(err, &derr) || len(derr.Details["candidates"].([]app.SessionChoice)) != 2 {
		t.Fatalf("Save with an ambiguous name: %v", err)
	}
	if _, errs, code := set("release prp"); code == 0 || !strings.Contains(errs, "Similar: “release prep”") {
		t.Fatalf("an unknown name: exit %d, %s; want refused with the similar name", code, errs)
	}
	if _, errs, code := set(c); code == 0 || !strings.Contains(errs, "ran in "+other) {
		t.Fatalf("a session from another folder: exit %d, %s", code, errs)
	}
	out, errs, code := set(b)
	if code != 0 || !strings.Contains(out, `delivered into the session "release prep" (`+b+`)`) {
		t.Fatalf("by id: exit %d, %s %s", code, out, errs)
	}
	if out, errs, code := run(t, append([]string{"workers", "list"}, loc...)...); code != 0 || !strings.Contains(out, "claude-code in session “release prep”") {
		t.Fatalf("workers list: exit %d, %s %s", code, out, errs)
	}
	// Saved again with its id, the binding holds although the name is shared.
	st, err := r.Services.Workers.List()
	noErr(t, err)
	cfg := st.Workers[0].WorkerConfig
	cfg.Session = "release prep"
	saved, err := r.Services.Workers.Save(cfg)
	if err != nil || saved.SessionID != b {
		t.Fatalf("saved again: %+v, %v", saved.WorkerConfig, err)
	}

	list, err := r.Services.Workers.Sessions("claude-code", work)
	noErr(t, err)
	if len(list) != 2 || list[0].ID != b || list[1].ID != a || list[0].Name != "release prep" || !list[0].Idle {
		b, _ := json.Marshal(list)
		t.Fatalf("picker for %s: %s", work, b)
	}
	if list, err := r.Services.Workers.Sessions("gemini", work); err != nil || len(list) != 0 {
		t.Fatalf("picker for gemini: %v %v", list, err)
	}
}

// Ensure the relay reads Claude Code's sessions where CLAUDE_CONFIG_DIR
// moved them (the worker's CLI gets that variable too), for the worker
// form's picker and for `sessions list`, and not the home folder's.
func TestSessionsFollowClaudeConfigDir(t *testing.T) {
	home, elsewhere := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(elsewhere, ".claude"))
	work := filepath.Join(home, "work")
	noErr(t, os.Mkdir(work, 0o755))
	const moved, stale = "5e55a0b1-0000-4000-8000-0000000000d1", "5e55a0b1-0000-4000-8000-0000000000d2"
	writeClaudeSession(t, elsewhere, work, moved, "moved", "2026-11-30T10:00:00Z")
	writeClaudeSession(t, home, work, stale, "stale", "2026-11-30T11:00:00Z")

	r := startRelay(t)
	list, err := r.Services.Workers.Sessions("claude-code", work)
	noErr(t, err)
	if len(list) != 1 || list[0].ID != moved {
		b, _ := json.Marshal(list)
		t.Fatalf("picker: %s; want only the session in CLAUDE_CONFIG_DIR", b)
	}
	out, errs, code := run(t, "sessions", "list", "--tool", "claude-code")
	if code != 0 || !strings.Contains(out, moved) || strings.Contains(out, stale) {
		t.Fatalf("sessions list: exit %d, %s %s; want only %s", code, out, errs, moved)
	}
}
