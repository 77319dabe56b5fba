package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"golang.org/x/sys/unix"
)

// clearWrapper prepares CLI homes the way the relay does on Linux, without
// depending on this kernel's Landlock: these tests look at the home a run
// gets, not at its confinement.
func clearWrapper(data string) sandbox.Wrapper {
	return sandbox.Wrapper{Self: "/bin/true", Protected: []string{data}, Homes: filepath.Join(data, "cli-homes"), GOOS: "linux",
		ABI: func() int { return 7 }, Seccomp: func() bool { return true }, UID: func() int { return 1000 }}
}

// Ensure the relay clears a worker's CLI home before each run of what the
// last run left there that the next would run or load: a program under
// each place the CLIs run or load one from (Gemini CLI's tmp/bin ripgrep,
// its ~/.agents skills, its project memory skills and checkpoint git
// hooks; Claude Code's shell snapshots, session environments, remote
// and policy settings, local install, jobs, scheduled tasks, launch and
// daemon settings, workflows and hooks; Codex's shell snapshots, its arg0
// helpers, its own and system skills, memories and plugins; a script under
// a name no CLI is known to read), and a symbolic link planted there
// (under a name of its own, in place of such a folder, inside a kept
// folder), which is removed and its target left as it was; while the
// session transcripts (the user's, through the home's links, and Gemini
// CLI's own chats in the home) stay, and the user's settings are linked
// again. Without the clearing each planted program is still there for the
// next run, so the test fails.
func TestCLIHomeClearedBeforeRun(t *testing.T) {
	tests := []struct {
		harness string
		// planted are written in the worker's home (relative to it) as
		// executables; links are made there pointing at the victim folder.
		planted, links []string
		// gone are folders the planted ones are in, gone with them.
		gone []string
		// kept are written through the home (relative to it); they stay.
		kept []string
		// linked is a link to the user's settings the next run gets.
		linked string
	}{
		{harness: "claude-code",
			planted: []string{"shell-snapshots/snapshot-bash-1-x.sh", "session-env/3f2a/sessionstart-hook-0.sh", "remote-settings.json",
				"policy-limits.json", "settings.local.json", "local/claude", "hooks/pre.sh", "jobs/j/run.sh", "scheduled_tasks.json",
				"launch.json", "daemon.json", "workflows/w.md", "agent-memory/a/MEMORY.md", "evil.sh"},
			links:  []string{"evil-link", "downloads", "teams"},
			gone:   []string{"shell-snapshots", "session-env", "local"},
			kept:   []string{"projects/{project}/s1.jsonl", "projects/{project}/memory/MEMORY.md"},
			linked: "settings.json"},
		{harness: "codex",
			planted: []string{"shell_snapshots/s.sh", "tmp/arg0/codex-arg0Ab12/apply_patch", "skills/evil/SKILL.md", "skills/evil/scripts/run.sh",
				"skills/.system/imagegen/scripts/gen.py", "memories/MEMORY.md", "plugins/cache/evil/plugin.json", "prompts/p.md", "hooks.json",
				"state_5.sqlite", "evil.sh"},
			links:  []string{"evil-link", "tmp/arg0/codex-arg0Zz99", "log"},
			gone:   []string{"tmp", "shell_snapshots", "memories", "skills"},
			kept:   []string{"sessions/2026/12/03/rollout-1.jsonl", "session_index.jsonl"},
			linked: "config.toml"},
		{harness: "gemini",
			planted: []string{".gemini/tmp/bin/rg", ".agents/skills/evil/SKILL.md", ".gemini/tmp/mine/memory/skills/evil/SKILL.md",
				".gemini/history/mine/.git/hooks/post-commit", ".gemini/skills/evil/SKILL.md", ".gemini/policies/evil.toml",
				".gemini/keybindings.json", "evil.sh",
				// The project registry, whose names Gemini CLI takes
				// unchecked: {"projects":{WORK:"mine/chats"}} makes
				// tmp/mine/chats the project's temporary folder, whose
				// memory (and its skills) it loads; nothing in a folder
				// in chats stays.
				".gemini/projects.json", ".gemini/tmp/mine/chats/memory/skills/evil/SKILL.md",
				".gemini/tmp/mine/chats/memory/MEMORY.md", ".gemini/tmp/mine/chats/0f83ac72/session-sub.jsonl"},
			links: []string{"evil-link", ".gemini/tmp/other", ".gemini/history/other", ".gemini/tmp/mine/chats/link.jsonl"},
			gone:  []string{".gemini/tmp/bin", ".agents", ".gemini/history", ".gemini/tmp/mine/memory", ".gemini/tmp/mine/chats/memory"},
			kept: []string{".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl",
				".gemini/tmp/mine/.project_root"},
			linked: ".gemini/settings.json"},
	}
	for _, tt := range tests {
		t.Run(tt.harness, func(t *testing.T) {
			home, data, work, run := cliLayout(t)
			victim := filepath.Join(home, "victim")
			writeTestFile(t, filepath.Join(victim, "keep.md"), "precious")
			req := runspec.SandboxRequest{
				Config:  relay.WorkerConfig{AgentSlug: "builder", Harness: tt.harness, Sandbox: relay.SandboxOn},
				Program: "/bin/sh", Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}, Workdir: work, RunDir: run,
			}
			w := clearWrapper(data)
			if _, err := w.Wrap(req); err != nil {
				t.Fatalf("first wrap: %v", err)
			}
			own := filepath.Join(data, "cli-homes", "builder", tt.harness)
			// Claude Code's transcripts folder of the working folder, which
			// the first run's setup made in the user's projects.
			var project string
			if ents, _ := os.ReadDir(filepath.Join(home, ".claude", "projects")); len(ents) == 1 {
				project = ents[0].Name()
			}
			expand := func(rel string) string {
				return filepath.Join(own, strings.ReplaceAll(rel, "{project}", project))
			}
			// What the run leaves: programs, and links to the victim.
			for _, rel := range tt.planted {
				writeTestFile(t, filepath.Join(own, rel), "#!/bin/sh\ntouch /tmp/pwned\n")
				if err := os.Chmod(filepath.Join(own, rel), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range tt.links {
				p := filepath.Join(own, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(victim, p); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range tt.kept {
				writeTestFile(t, expand(rel), "transcript")
			}

			// The worker's next run.
			if _, err := w.Wrap(req); err != nil {
				t.Fatalf("next wrap: %v", err)
			}
			for _, rel := range slices.Concat(tt.planted, tt.links, tt.gone) {
				if _, err := os.Lstat(filepath.Join(own, rel)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left by the last run is still in the next run's home: %v", rel, err)
				}
			}
			if ents, err := os.ReadDir(victim); err != nil || len(ents) != 1 {
				t.Errorf("the links' target changed: %v, %v", ents, err)
			}
			if b, err := os.ReadFile(filepath.Join(victim, "keep.md")); err != nil || string(b) != "precious" {
				t.Errorf("victim/keep.md: %q, %v", b, err)
			}
			for _, rel := range tt.kept {
				if b, err := os.ReadFile(expand(rel)); err != nil || string(b) != "transcript" {
					t.Errorf("the session file %s was not kept: %q, %v", rel, b, err)
				}
			}
			if l, err := os.Readlink(filepath.Join(own, tt.linked)); err != nil || !filepath.IsAbs(l) || !within(l, home) {
				t.Errorf("the next run's %s is not the user's: %q, %v", tt.linked, l, err)
			}
		})
	}
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

// Ensure removing a worker's CLI homes removes its folder in the CLI homes
// and nothing else: not where a link planted in it leads (the relay's data
// folder, a folder of the user's), not another worker's home, not the data
// folder; a slug that is not one name removes nothing. Following the links,
// the removal empties the victims, so the test can fail.
func TestRemoveHome(t *testing.T) {
	home, data, _, _, _ := layout(t)
	w := clearWrapper(data)
	victim := filepath.Join(home, "victim")
	writeTestFile(t, filepath.Join(victim, "keep.md"), "precious")
	writeTestFile(t, filepath.Join(w.Homes, "builder", "codex", "skills", "x", "SKILL.md"), "x")
	writeTestFile(t, filepath.Join(w.Homes, "reviewer", "gemini", ".gemini", "tmp", "r", "chats", "s.jsonl"), "other")
	for _, l := range []struct{ at, to string }{
		{filepath.Join(w.Homes, "builder", "codex", "sessions"), victim},
		{filepath.Join(w.Homes, "builder", "data"), data},
		{filepath.Join(w.Homes, "builder", "claude-code"), victim},
	} {
		if err := os.Symlink(l.to, l.at); err != nil {
			t.Fatal(err)
		}
	}
	for _, slug := range []string{"", ".", "..", "reviewer/..", "builder"} {
		if err := w.RemoveHome(slug); err != nil {
			t.Fatalf("remove %q: %v", slug, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(w.Homes, "builder")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worker's CLI homes are still there: %v", err)
	}
	for p, want := range map[string]string{
		filepath.Join(victim, "keep.md"): "precious",
		filepath.Join(data, "api-token"): "cca_admin_secret",
		filepath.Join(w.Homes, "reviewer", "gemini", ".gemini", "tmp", "r", "chats", "s.jsonl"): "other",
	} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s: %q, %v", p, b, err)
		}
	}
	if err := w.RemoveHome("nobody"); err != nil {
		t.Errorf("removing homes that do not exist: %v", err)
	}
	if err := (sandbox.Wrapper{}).RemoveHome("builder"); err != nil {
		t.Errorf("a wrapper without homes: %v", err)
	}
}

// Ensure a session file of a Gemini worker's CLI home that is a hard link
// to a file outside the home (one the run could write, linked into its
// chats) is not kept for the next run, which might no longer be allowed
// that file; the file itself is left as it was. Keeping every regular file
// its pattern names, the link stays in the next run's home, so the test
// can fail.
func TestCLIHomeHardLinkNotKept(t *testing.T) {
	w, req, own := geminiHome(t)
	secret := filepath.Join(filepath.Dir(req.Workdir), "repoA", "secret.env")
	writeTestFile(t, secret, "TOKEN=1")
	const link = ".gemini/tmp/mine/chats/session-2026-12-03T17-37-0f83ac72.jsonl"
	if err := os.MkdirAll(filepath.Dir(filepath.Join(own, link)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(own, link)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(own, link)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hard link to %s is still in the next run's home: %v", secret, err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "TOKEN=1" {
		t.Errorf("the linked file changed: %q, %v", b, err)
	}
}

// Ensure a Gemini worker's CLI home keeps only the session files Gemini
// CLI writes (session-*.jsonl, session-*.json), each of at most 64 MiB,
// the newest 500 of a project's chats: another name, a bigger file and the
// oldest past 500 are gone in the next run's home. Keeping every file in
// chats, each of those stays, so the test can fail.
func TestCLIHomeKeptFilesBounded(t *testing.T) {
	w, req, own := geminiHome(t)
	chats := filepath.Join(own, ".gemini", "tmp", "mine", "chats")
	base := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var kept []string
	for i := range 500 {
		name := fmt.Sprintf("session-2026-12-03T00-00-%08d.jsonl", i)
		writeTestFile(t, filepath.Join(chats, name), "transcript")
		mtime := base.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(filepath.Join(chats, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			kept = append(kept, name)
		}
	}
	writeTestFile(t, filepath.Join(chats, "session-old.json"), "transcript")
	kept = append(kept, "session-old.json")
	if err := os.Chtimes(filepath.Join(chats, "session-old.json"), base.Add(time.Hour), base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	gone := []string{"session-2026-12-03T00-00-00000000.jsonl", "notes.md", "session-x.sh", "session-big.jsonl"}
	writeTestFile(t, filepath.Join(chats, "notes.md"), "planted")
	writeTestFile(t, filepath.Join(chats, "session-x.sh"), "planted")
	big, err := os.Create(filepath.Join(chats, "session-big.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: its size, not its blocks, counts.
	if err := errors.Join(big.Truncate(64<<20+1), big.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(chats, "session-big.jsonl"), base.Add(2*time.Hour), base.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	for _, name := range gone {
		if _, err := os.Lstat(filepath.Join(chats, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still in the next run's home: %v", name, err)
		}
	}
	missing := 0
	for _, name := range kept {
		if b, err := os.ReadFile(filepath.Join(chats, name)); err != nil || string(b) != "transcript" {
			missing++
		}
	}
	if ents, err := os.ReadDir(chats); err != nil || len(ents) != 500 || missing > 0 {
		t.Errorf("the next run's chats hold %d files (%v), %d of the newest 500 missing; want those 500", len(ents), err, missing)
	}
}

// Ensure a process left from a run that writes its CLI home nonstop (here,
// through a descriptor of the home, as a leftover confined to that folder
// does) writes nothing the next run finds in its home: the next run's home
// is a new folder. Clearing the home in place, what the leftover writes
// after the clearing is in the next run's home, so the test can fail.
func TestCLIHomeLeftoverWriterKeptOut(t *testing.T) {
	w, req, own := geminiHome(t)
	fd, err := unix.Open(own, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		// Writes until told to stop, and once after.
		for i := 0; ; i++ {
			f, err := unix.Openat(fd, fmt.Sprintf("leftover-%d", i), unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
			if err != nil {
				done <- err
				return
			}
			unix.Close(f)
			select {
			case <-stop:
				f, err := unix.Openat(fd, "leftover-last", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
				if err == nil {
					unix.Close(f)
				}
				done <- err
				return
			default:
			}
		}
	}()
	// Let it write before the next run is prepared.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Lstat(filepath.Join(own, "leftover-100")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the leftover wrote nothing")
		}
		time.Sleep(time.Millisecond)
	}
	_, werr := w.Wrap(req)
	close(stop)
	// ENOENT: its folder was removed, as the last home.
	if err := <-done; err != nil && err != unix.ENOENT {
		t.Fatalf("the leftover: %v", err)
	}
	if werr != nil {
		t.Fatalf("next wrap: %v", werr)
	}
	ents, err := os.ReadDir(own)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "leftover-") {
			t.Fatalf("what the leftover wrote (%s) is in the next run's home", e.Name())
		}
	}
}

// Ensure what the removal of a worker's last CLI homes left in its folder
// of homes (homes moved aside, folders a removal moved up) is removed
// before the next run, not only when the worker goes. Removing only the
// homes moved aside, the folders moved up stay, so the test can fail.
func TestCLIHomeLeftFoldersRemoved(t *testing.T) {
	w, req, own := geminiHome(t)
	homes := filepath.Dir(own)
	for _, rel := range []string{".crosschat-old-gemini-1-1/x/evil.sh", ".crosschat-deep-1-1/d/evil.sh"} {
		writeTestFile(t, filepath.Join(homes, rel), "planted")
	}
	if _, err := w.Wrap(req); err != nil {
		t.Fatalf("next wrap: %v", err)
	}
	ents, err := os.ReadDir(homes)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "gemini" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the worker's homes hold %v, want only gemini", names)
	}
}
