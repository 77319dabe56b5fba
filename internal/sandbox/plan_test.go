package sandbox_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a run's rules: the system read-only; per preset the CLI's
// configuration folders read-write (CODEX_HOME for Codex); the working,
// extra and run folders read-write; the folders on PATH read-only but never
// the home folder or what holds it (nor what the system folders cover);
// the allowed paths as asked; and never
// the home folder itself or the relay's data folder.
func TestPlan(t *testing.T) {
	home := "/home/ada"
	env := []string{"HOME=" + home, "PATH=/home/ada/.nvm/versions/node/v22/bin:/usr/bin:/home/ada:.:/:/home/ada/.local/bin",
		"CODEX_HOME=/srv/codex-home", "CLAUDE_CONFIG_DIR=/srv/claude"}
	base := runspec.SandboxRequest{Program: "/usr/bin/agent", Env: env, Workdir: "/home/ada/projects/mine",
		ExtraDirs: []string{"/home/ada/shared"}, RunDir: "/home/ada/.local/share/crosschat-relay/runs/t1"}
	tests := []struct {
		harness   string
		allow     []string
		rw, ro    []string
		notRW     []string
		notAnyway []string
	}{
		// The CLIs' settings linked into the run's CLI home are read-only,
		// not the rest of the user's CLI folders (file and prompt history,
		// IDE lock files): each run writes a CLI home of its own in its
		// run folder, and the user's transcripts.
		{harness: "claude-code", rw: []string{"/srv/claude/projects/-home-ada-projects-mine", "/srv/claude/projects/-home-ada-shared", base.RunDir + "/home/claude-code"},
			ro:        []string{"/srv/claude/settings.json", "/srv/claude/.credentials.json", "/srv/claude/plugins", "/home/ada/.local/share/claude"},
			notRW:     []string{"/srv/codex-home", "/home/ada/.local/share/claude", "/srv/claude/projects"},
			notAnyway: []string{"/home/ada/.claude", "/home/ada/.claude.json", "/srv/claude", "/srv/claude/history.jsonl", "/srv/claude/file-history", "/srv/claude/ide"}},
		{harness: "codex", rw: []string{"/srv/codex-home/sessions", "/srv/codex-home/session_index.jsonl", base.RunDir + "/home/codex"},
			ro: []string{"/srv/codex-home/config.toml", "/srv/codex-home/auth.json"}, notRW: []string{"/home/ada/.claude"},
			notAnyway: []string{"/home/ada/.codex", "/srv/codex-home", "/srv/codex-home/history.jsonl"}},
		{harness: "gemini", rw: []string{base.RunDir + "/home/gemini"}, ro: []string{"/home/ada/.gemini/settings.json", "/home/ada/.gemini/oauth_creds.json"},
			notAnyway: []string{"/home/ada/.gemini", "/home/ada/.gemini/tmp"}},
		{harness: "opencode", rw: []string{"/home/ada/.config/opencode"}},
		{harness: "custom", allow: []string{"/data/sets", "/home/ada/.cache/tool:rw"}, rw: []string{"/home/ada/.cache/tool"},
			ro: []string{"/data/sets"}, notRW: []string{"/home/ada/.claude", "/home/ada/.codex", "/data/sets"}},
	}
	for _, tt := range tests {
		t.Run(tt.harness, func(t *testing.T) {
			req := base
			req.Config = relay.WorkerConfig{Harness: tt.harness, AllowPaths: tt.allow}
			r := sandbox.Plan(req, "linux")
			for _, p := range append([]string{base.Workdir, "/home/ada/shared"}, tt.rw...) {
				if !slices.Contains(r.RW, p) {
					t.Errorf("%s is not read-write: %q", p, r.RW)
				}
			}
			for _, p := range append([]string{"/home/ada/.nvm/versions/node/v22/bin", "/home/ada/.nvm/versions/node/v22", "/home/ada/.local/bin", "/home/ada/.gitconfig", base.RunDir}, tt.ro...) {
				if !slices.Contains(r.RO, p) {
					t.Errorf("%s is not read-only: %q", p, r.RO)
				}
			}
			for _, p := range tt.notRW {
				if slices.Contains(r.RW, p) {
					t.Errorf("%s is read-write", p)
				}
			}
			for _, p := range tt.notAnyway {
				if slices.ContainsFunc(slices.Concat(r.RO, r.RW), func(a string) bool { return a == p || strings.HasPrefix(p, a+"/") }) {
					t.Errorf("%s is allowed: ro %q rw %q", p, r.RO, r.RW)
				}
			}
			for _, p := range slices.Concat(r.RO, r.RW) {
				if p == home || p == "/" || p == "/home" || p == "/home/ada/.local" || p == "/home/ada/.local/share/crosschat-relay" || !filepath.IsAbs(p) {
					t.Errorf("the rules allow %s: ro %q rw %q", p, r.RO, r.RW)
				}
			}
			if !slices.Contains(r.System, "/usr") || !slices.Contains(r.System, "/etc") || r.TempDir != filepath.Join(base.RunDir, "tmp") {
				t.Errorf("system %q, temp %q", r.System, r.TempDir)
			}
		})
	}
}

// Ensure a CLI linked from a bin folder into node_modules gets the
// node_modules folder (its hoisted dependencies are its siblings).
func TestPlanInstallRoot(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "lib", "node_modules", "@acme", "agent")
	if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "dist", "cli.js"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(bin, "agent")
	if err := os.Symlink(filepath.Join(pkg, "dist", "cli.js"), link); err != nil {
		t.Fatal(err)
	}
	r := sandbox.Plan(runspec.SandboxRequest{Program: link, Env: []string{"HOME=/home/ada"}, Workdir: "/w"}, "linux")
	real, _ := filepath.EvalSymlinks(filepath.Join(dir, "lib", "node_modules"))
	if !slices.Contains(r.RO, bin) || !slices.Contains(r.RO, real) {
		t.Fatalf("ro %q, want %s and %s", r.RO, bin, real)
	}
}

// Ensure the macOS profile denies by default, keeps the network open, reads
// the system and read-only paths, writes the read-write ones and the
// temporary folder, and quotes a path so it cannot end its string early.
func TestProfile(t *testing.T) {
	p := sandbox.Profile(sandbox.Rules{
		System: []string{"/usr", "/System"}, RO: []string{"/opt/agent"},
		RW: []string{"/Users/ada/work", `/Users/ada/odd "name") (allow file-write* (subpath "/")`}, TempDir: "/Users/ada/run/tmp",
	})
	for _, want := range []string{
		"(version 1)\n(deny default)\n",
		"(allow network*)",
		"(allow file-read* process-exec\n  (subpath \"/usr\")\n  (subpath \"/System\")\n  (subpath \"/opt/agent\"))",
		"(allow file-read* file-write* process-exec\n  (subpath \"/Users/ada/work\")\n  (subpath \"/Users/ada/odd \\\"name\\\") (allow file-write* (subpath \\\"/\\\")\")\n  (subpath \"/Users/ada/run/tmp\"))",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, `(subpath "/")`) {
		t.Errorf("a quoted path broke out of its string:\n%s", p)
	}
}

// Ensure macOS runs go through sandbox-exec with the profile and the
// temporary folder, and Windows runs go unsandboxed with a warning.
func TestWrapOtherSystems(t *testing.T) {
	req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "claude-code"}, Program: "/opt/claude", Args: []string{"-p"},
		Env: []string{"HOME=/Users/ada"}, Workdir: "/Users/ada/w", RunDir: t.TempDir()}
	s, err := sandbox.Wrapper{Self: "/relay", GOOS: "darwin"}.Wrap(req)
	if err != nil || !s.Confined || s.Program != "/usr/bin/sandbox-exec" || s.Args[0] != "-p" || !strings.Contains(s.Args[1], "(deny default)") ||
		!slices.Contains(s.Args, "TMPDIR="+filepath.Join(req.RunDir, "tmp")) || s.Args[len(s.Args)-2] != "/opt/claude" {
		t.Fatalf("darwin: %+v %v", s, err)
	}
	s, err = sandbox.Wrapper{Self: "/relay", GOOS: "windows"}.Wrap(req)
	if err != nil || s.Confined || !s.Warning || s.Program != "/opt/claude" || !strings.Contains(s.Log, "Not sandboxed: runs on Windows") {
		t.Fatalf("windows: %+v %v", s, err)
	}
}

// Ensure a data folder under a system folder (--data-dir under /opt) is
// not readable by the run through that system folder: the system folder
// is dropped from the rules (Linux and the macOS profile), with a warning
// in the run log, while the CLI's installation and the folders on PATH in
// it keep rules of their own, and no rule holds the data folder.
func TestDataUnderSystemFolder(t *testing.T) {
	home := t.TempDir()
	data := "/opt/crosschat-relay/data"
	req := runspec.SandboxRequest{Config: relay.WorkerConfig{Harness: "custom", Sandbox: relay.SandboxOn},
		Program: "/opt/cli/bin/agent", Env: []string{"HOME=" + home, "PATH=/opt/tools/bin:/usr/bin:/bin"},
		Workdir: filepath.Join(home, "w"), RunDir: filepath.Join(home, "run")}
	for _, goos := range []string{"linux", "darwin"} {
		w := sandbox.Wrapper{Self: "/relay", Protected: []string{data}, GOOS: goos,
			ABI: func() int { return 7 }, Seccomp: func() bool { return true }, UID: func() int { return 1000 }}
		s, err := w.Wrap(req)
		if err != nil || !s.Confined || !s.Warning || !strings.Contains(s.Log, "the system folder /opt holds the relay's data folder") {
			t.Fatalf("%s: %+v, %v", goos, s, err)
		}
		var paths []string
		if goos == "linux" {
			var r sandbox.Rules
			if err := json.Unmarshal([]byte(s.Args[2]), &r); err != nil {
				t.Fatal(err)
			}
			if slices.Contains(r.System, "/opt") || !slices.Contains(r.System, "/usr") ||
				!slices.Contains(r.RO, "/opt/cli/bin") || !slices.Contains(r.RO, "/opt/tools/bin") {
				t.Errorf("linux rules: %+v", r)
			}
			paths = slices.Concat(r.System, r.Devices, r.RO, r.RW)
		} else {
			if strings.Contains(s.Args[1], `(subpath "/opt")`) || !strings.Contains(s.Args[1], `(subpath "/opt/cli/bin")`) {
				t.Errorf("darwin profile:\n%s", s.Args[1])
			}
		}
		for _, p := range paths {
			if p == data || strings.HasPrefix(data, p+"/") {
				t.Errorf("%s: the rule %s holds the data folder", goos, p)
			}
		}
	}
}
