//go:build unix

package worker_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/worker"
)

// The fake agent CLI is this test binary run again: TestHelperProcess acts
// by the MODE:<word> marker in its prompt when CCR_WORKER_HELPER=1.
const helperEnv = "CCR_WORKER_HELPER"

var modePattern = regexp.MustCompile(`MODE:(\w+)`)

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	os.Exit(helperMain())
}

// relayEnv names the data folder of a relay that TestHelperRelay runs in a
// process of its own until it is killed: the relay that crashes mid-run in
// TestRestartRecovery.
const relayEnv = "CCR_WORKER_RELAY"

func TestHelperRelay(t *testing.T) {
	dir := os.Getenv(relayEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	os.Exit(relayMain(dir))
}

// relayMain runs a worker manager on the env of dir until the process is
// killed, and returns an exit code if it cannot start.
func relayMain(dir string) int {
	db, err := store.Open(filepath.Join(dir, "data", "relay.db"), store.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	m, err := worker.NewManager(envIn(dir, db).opts)
	if err == nil {
		err = m.Start(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	time.Sleep(5 * time.Minute) // the test kills the process long before
	return 0
}

// relayProcess starts a relay in a process of its own on the env's data
// folder (see TestHelperRelay); cleanup kills it if it still runs and shows
// its output when the test failed.
func (e *env) relayProcess() *exec.Cmd {
	e.t.Helper()
	logPath := filepath.Join(e.dir, "relay.log")
	log, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRelay$")
	cmd.Env = append(os.Environ(), relayEnv+"="+e.dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		e.t.Fatalf("start the relay process: %v", err)
	}
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
		if e.t.Failed() {
			b, _ := os.ReadFile(logPath)
			e.t.Logf("relay process output:\n%s", b)
		}
	})
	return cmd
}

// helperMain behaves like an agent CLI and returns its exit code.
func helperMain() int {
	if m := os.Getenv("CCR_HELPER_MODE"); m == "grandchild" || m == "setsid" {
		// A setsid grandchild is a daemon: out of the run's session and
		// process group.
		if m == "setsid" {
			if _, err := syscall.Setsid(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		signal.Ignore(syscall.SIGTERM) // only SIGKILL of the whole group ends it
		time.Sleep(2 * time.Minute)
		return 0
	}
	var prompt []byte
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	var resultFile string
	if len(args) > 0 {
		prompt, _ = os.ReadFile(args[0])
		if len(args) > 2 && args[1] == "--out" {
			resultFile = args[2]
		}
	} else {
		prompt, _ = io.ReadAll(os.Stdin)
	}
	mode := "done"
	if m := modePattern.FindSubmatch(prompt); m != nil {
		mode = string(m[1])
	}
	token := os.Getenv("CROSSCHAT_TOKEN")
	if f := os.Getenv("CCR_TOKEN_FILE"); f != "" {
		_ = os.WriteFile(f, []byte(token), 0o600)
	}
	out := os.Stdout
	switch mode {
	case "done":
		cwd, _ := os.Getwd()
		kind := "missing"
		if strings.HasPrefix(token, relay.RunTokenPrefix) {
			kind = "run"
		}
		fmt.Fprintf(out, "Done by %s in %s\ntoken:%s\nprompt-has-title:%v\n",
			os.Getenv("CROSSCHAT_AGENT"), cwd, kind, strings.Contains(string(prompt), "## Task: "))
	case "block":
		fmt.Fprintln(out, "BLOCKED: I need the API key.")
	case "fail":
		fmt.Fprintln(os.Stderr, "harness crashed: out of memory")
		return 3
	case "failed", "failedexit":
		// The CLI's own error in place of an answer, said in its stream
		// (as Claude Code's is_error result), exiting 0 or 1.
		fmt.Fprintln(out, "failure:"+notLoggedIn)
		fmt.Fprintln(out, notLoggedIn)
		if mode == "failedexit" {
			return 1
		}
	case "empty":
		fmt.Fprintln(os.Stderr, "nothing to say")
	case "sleep", "daemon", "daemonsleep":
		// A grandchild in the run's process group, or a daemon (which has
		// left it before its pid is written); "daemon" then ends.
		gc := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		child := "grandchild"
		if mode != "sleep" {
			child = "setsid"
		}
		gc.Env = append(os.Environ(), "CCR_HELPER_MODE="+child)
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for deadline := time.Now().Add(30 * time.Second); mode != "sleep"; time.Sleep(10 * time.Millisecond) {
			if g, err := syscall.Getpgid(gc.Process.Pid); err == nil && g == gc.Process.Pid || time.Now().After(deadline) {
				break
			}
		}
		if f := os.Getenv("CCR_PID_FILE"); f != "" {
			_ = os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d", os.Getpid(), gc.Process.Pid), 0o600)
			_ = os.Rename(f+".tmp", f)
		}
		fmt.Fprintln(out, "working")
		if mode != "daemon" {
			time.Sleep(2 * time.Minute)
		}
	case "setsidcli":
		// A CLI that leaves the run's process group itself and ignores
		// SIGTERM: the worker's group signals never reach it.
		if _, err := syscall.Setsid(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		signal.Ignore(syscall.SIGTERM)
		if f := os.Getenv("CCR_PID_FILE"); f != "" {
			_ = os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d", os.Getpid(), os.Getpid()), 0o600)
			_ = os.Rename(f+".tmp", f)
		}
		fmt.Fprintln(out, "working")
		time.Sleep(2 * time.Minute)
	case "write":
		_ = os.WriteFile("made-by-run.txt", []byte("made"), 0o644)
		for _, d := range filepath.SplitList(os.Getenv("CROSSCHAT_EXTRA_DIRS")) {
			_ = os.WriteFile(filepath.Join(d, "delivered.png"), []byte("png"), 0o644)
		}
		fmt.Fprintln(out, "Wrote the files.")
	case "chatty":
		fmt.Fprintln(out, "step one")
		fmt.Fprintln(os.Stderr, "warning: token "+token)
		fmt.Fprintln(out, "All done with "+token)
	case "encoded":
		// A run that read the admin token file and hands it back encoded,
		// and its own run token too, in its answer and its log.
		admin, _ := os.ReadFile(os.Getenv("CCR_ADMIN_FILE"))
		for _, sec := range []string{string(admin), token} {
			b := []byte(sec)
			fmt.Fprintln(out, "b64:"+base64.StdEncoding.EncodeToString(b))
			fmt.Fprintln(out, "b64url:"+base64.RawURLEncoding.EncodeToString(b))
			fmt.Fprintln(out, "b64mid:"+base64.StdEncoding.EncodeToString(append([]byte("key="), b...)))
			fmt.Fprintln(out, "hex:"+hex.EncodeToString(b))
			fmt.Fprintln(out, "HEX:"+strings.ToUpper(hex.EncodeToString(b)))
			fmt.Fprintln(out, "url:"+url.QueryEscape(sec))
			fmt.Fprintln(os.Stderr, "log b64:"+base64.StdEncoding.EncodeToString(b)+" hex:"+hex.EncodeToString(b))
		}
	case "env":
		env := os.Environ()
		sort.Strings(env)
		fmt.Fprintln(out, strings.Join(env, "\n"))
	case "file":
		fmt.Fprintln(out, "stdout noise")
		path := resultFile
		if path == "" {
			path = os.Getenv("CROSSCHAT_RESULT_FILE")
		}
		_ = os.WriteFile(path, []byte("Answer from the file."), 0o600)
	case "ran":
		_ = os.WriteFile(os.Getenv("CCR_RAN_FILE"), []byte("ran"), 0o600)
		fmt.Fprintln(out, "I ran.")
	case "sid":
		// The run's session: its own (a new session has no controlling
		// terminal), or the relay's.
		b, _ := os.ReadFile("/proc/self/stat")
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		fmt.Fprintf(out, "pid:%d sid:%s\n", os.Getpid(), f[3])
	case "link", "hardlink":
		// A run that makes its result file a link to a file of the user's
		// (~/.ssh/id_ed25519) for the relay to read for it.
		path := os.Getenv("CROSSCHAT_RESULT_FILE")
		_ = os.Remove(path)
		link := os.Symlink
		if mode == "hardlink" {
			link = os.Link
		}
		if err := link(os.Getenv("CCR_SECRET_FILE"), path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, "stdout noise")
	case "session", "sessiondie", "sessionmute", "sessionhang", "sessionhangearly", "sessionstuck", "sessionstuckearly",
		"sessionnologin", "sessionnologinstream", "sessionnologinhang":
		return sessionHelper(mode, prompt)
	case "plantwait", "waitgone":
		// Two runs of workers sharing a folder: one plants a hook and
		// ends once the other has started; the other starts and ends once
		// the hook is gone (undone after the first).
		hook := filepath.Join(".git", "hooks", "post-checkout")
		if mode == "plantwait" {
			_ = os.WriteFile(hook, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755)
		} else {
			_ = os.WriteFile("b-started", nil, 0o644)
		}
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			_, started := os.Stat("b-started")
			_, planted := os.Lstat(hook)
			if mode == "plantwait" && started == nil || mode == "waitgone" && planted != nil {
				break
			}
		}
		fmt.Fprintln(out, "Done.")
	case "remember":
		fmt.Fprintln(out, "session:sess-1")
		fmt.Fprintln(out, "Round done.")
	}
	return 0
}
