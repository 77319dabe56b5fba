package harness_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/harness"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/runspec"
)

// TestCaptureStreams re-captures testdata/streams/*.jsonl from the real agent
// CLIs. It is skipped unless CROSSCHAT_CAPTURE_ROOT is set:
//
//	CROSSCHAT_CAPTURE_ROOT   a folder outside /tmp (Codex refuses to create its
//	                         sandbox helpers under /tmp) for homes and workdirs
//	CROSSCHAT_CAPTURE_CLIS   a folder with claude/, codex/ and gemini/, each an
//	                         `npm install --prefix` of @anthropic-ai/claude-code,
//	                         @openai/codex and @google/gemini-cli
//	CROSSCHAT_CAPTURE_MODEL  a fake model endpoint (Anthropic Messages, OpenAI
//	                         Responses and Gemini APIs) on loopback that scripts
//	                         a shell command, a file write, one MCP call
//	                         (list_agents) and a final answer:
//	                         testdata/capture/fake-model.mjs, http://127.0.0.1:47319
//	CROSSCHAT_CAPTURE_MCP    an MCP endpoint accepting "Bearer tok-…" tokens
//	                         (the same script: http://127.0.0.1:47320/mcp)
//	CROSSCHAT_CAPTURE_WORKDIR_FILE  where to tell the fake model the workdir
//	                         (its FAKE_WORKDIR_FILE)
//
// Each CLI runs with the exact command Build returns, once fresh and once
// resuming the session the parser found.
func TestCaptureStreams(t *testing.T) {
	root := os.Getenv("CROSSCHAT_CAPTURE_ROOT")
	if root == "" {
		t.Skip("set CROSSCHAT_CAPTURE_ROOT (and the other CROSSCHAT_CAPTURE_* variables) to capture real CLI streams")
	}
	clis, model, mcpURL := os.Getenv("CROSSCHAT_CAPTURE_CLIS"), os.Getenv("CROSSCHAT_CAPTURE_MODEL"), os.Getenv("CROSSCHAT_CAPTURE_MCP")
	for _, tc := range []struct {
		cli, preset, bin string
		setup            func(home string) error
		env              []string
	}{
		{"claude", harness.ClaudeCode, "claude/node_modules/.bin/claude", nil, []string{
			"ANTHROPIC_BASE_URL=" + model, "ANTHROPIC_API_KEY=sk-ant-mock",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}},
		{"codex", harness.Codex, "codex/node_modules/.bin/codex", func(home string) error {
			return writeFile(filepath.Join(home, ".codex", "config.toml"), "model = \"mock-model\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\nname = \"mock\"\nbase_url = \""+model+"/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_KEY\"\n")
		}, []string{"MOCK_KEY=mock"}},
		{"gemini", harness.Gemini, "gemini/node_modules/.bin/gemini", func(home string) error {
			if err := writeFile(filepath.Join(home, ".gemini", "settings.json"), `{"security":{"auth":{"selectedType":"gemini-api-key"}}}`); err != nil {
				return err
			}
			// What Connect writes, so the run sees the relay as the user's chats do.
			_, err := harness.Connect(context.Background(), harness.Gemini, harness.Env{Home: home, GOOS: "linux"}, mcpURL, "tok-user")
			return err
		}, []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "GOOGLE_GEMINI_BASE_URL=" + model, "GEMINI_API_KEY=mock"}},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			base := filepath.Join(root, tc.cli)
			if err := os.RemoveAll(base); err != nil {
				t.Fatal(err)
			}
			home, wd, run := filepath.Join(base, "home"), filepath.Join(base, "work"), filepath.Join(base, "run")
			for _, d := range []string{home, wd, run, filepath.Join(base, "assets")} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if err := writeFile(filepath.Join(wd, "README.md"), "# Harbour\n"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(os.Getenv("CROSSCHAT_CAPTURE_WORKDIR_FILE"), []byte(wd), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				if err := tc.setup(home); err != nil {
					t.Fatal(err)
				}
			}
			mcpFile := filepath.Join(run, "mcp.json")
			if err := writeFile(mcpFile, `{"mcpServers":{"crosschat-run":{"type":"http","url":"`+mcpURL+`","headers":{"Authorization":"Bearer tok-run"}}}}`); err != nil {
				t.Fatal(err)
			}
			session := ""
			for _, round := range []string{"run", "resume"} {
				in := promptInput()
				in.ExtraDirs = []string{filepath.Join(base, "assets")}
				in.Task.Instructions = "List the folder, write notes.txt saying hello, and list the relay's agents."
				if round == "resume" {
					in.Resumed = true
					in.Task.Reports = []relay.Report{{Kind: relay.ReportCompleted, Message: "Done."}, {Kind: relay.ReportChanges, Message: "Say hello twice."}}
				}
				req := runspec.Request{
					Config: relay.WorkerConfig{AgentSlug: "builder", Harness: tc.preset, Command: filepath.Join(clis, tc.bin), Workdir: wd},
					RunDir: run, PromptFile: filepath.Join(run, "task.md"), ResultFile: filepath.Join(run, "result.md"),
					MCPConfigFile: mcpFile, MCPURL: mcpURL, ExtraDirs: in.ExtraDirs, ResumeSession: session,
				}
				spec, err := harness.Build(req, "linux")
				if err != nil {
					t.Fatal(err)
				}
				in.RelayServer = spec.RelayServer
				req.Prompt = harness.Prompt(in)
				if spec, err = harness.Build(req, "linux"); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				cmd := exec.CommandContext(ctx, spec.Program, spec.Args...)
				cmd.Dir = wd
				cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "CROSSCHAT_TOKEN=tok-run"}, tc.env...)
				for k, v := range spec.Env {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				cmd.Stdin = strings.NewReader(spec.Stdin)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err = cmd.Run()
				cancel()
				if err != nil {
					t.Fatalf("%s %s: %v\n%s\n%s", round, spec.Args, err, stdout.String(), stderr.String())
				}
				if err := os.WriteFile(filepath.Join("testdata", "streams", tc.cli+"-"+round+".jsonl"), stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				p := harness.NewParser(spec.Events)
				sc := bufio.NewScanner(&stdout)
				sc.Buffer(nil, 16<<20)
				for sc.Scan() {
					p.Line(sc.Text())
				}
				session = p.SessionID()
				if session == "" {
					t.Fatalf("%s: no session id in the stream", round)
				}
				b, _ := json.Marshal(spec.Args)
				t.Logf("%s %s: session %s, answer %q", tc.cli, b, session, p.Answer())
			}
		})
	}
}

func writeFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(s), 0o600)
}
