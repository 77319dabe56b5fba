package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Environment variables of the live-session verbs (monitor, channel). A
// worker run already has CROSSCHAT_TOKEN and CROSSCHAT_MCP_URL.
const (
	envAgentToken = "CROSSCHAT_TOKEN"
	envRelayURL   = "CROSSCHAT_URL"
	envMCPURL     = "CROSSCHAT_MCP_URL"
	// Claude Code gives these to the MCP servers and commands it starts:
	// the session's id, and its name for a background session.
	envClaudeSession     = "CLAUDE_CODE_SESSION_ID"
	envClaudeSessionName = "CLAUDE_CODE_SESSION_NAME"
)

// Monitor line prefixes: crosschat's wake contract.
const (
	MonitorTaskPrefix    = "CROSSCHAT_TASK "
	MonitorUpdatePrefix  = "CROSSCHAT_UPDATE "
	MonitorMessagePrefix = "CROSSCHAT_MESSAGE "
)

// monitor's line formats (--format).
const (
	formatTask    = "task"
	formatMessage = "message"
)

// maxMonitorMessage bounds the message in one monitor line (runes).
const maxMonitorMessage = 2000

// liveFlags are the flags monitor and channel share: which relay, which
// agent, where to resume.
type liveFlags struct {
	// project is the project id given as the verb's argument.
	project string
	token   string
	url     string
	agent   string
	after   int64
	state   string
	// register registers the working folder as a project when no token is
	// given and it is not registered yet (the Claude Code plugin's channel).
	register bool
	// format is monitor's line format: "task" (CROSSCHAT_TASK/UPDATE) or
	// "message" (CROSSCHAT_MESSAGE).
	format string
	// session and sessionName name the agent-CLI session served (default
	// CLAUDE_CODE_SESSION_ID and CLAUDE_CODE_SESSION_NAME).
	session, sessionName string
	// tokenFrom says where stream took the token, and tokenFix what to
	// do, for a refusal of it.
	tokenFrom, tokenFix string
}

// parseLive makes the command of a live-session verb (monitor, channel)
// with the flags they share, and parses args: the project's id, if given,
// and the flags before or after it.
func parseLive(name string, args []string, stdout, stderr io.Writer) (*command, *liveFlags, error) {
	c, err := newCommand(name, stdout, stderr)
	if err != nil {
		return nil, nil, err
	}
	f := &liveFlags{after: -1}
	c.fs.StringVar(&f.token, "token", "", "deprecated: the agent's token on the command line, where every user of the computer can read it; use "+envAgentToken+" or a registered project")
	c.fs.StringVar(&f.url, "url", "", "the relay's URL, e.g. http://127.0.0.1:4318 (default: --host/--port when given, else env "+envRelayURL+" or "+envMCPURL+", else env host and port, else the project's relay, else the running relay's)")
	c.fs.StringVar(&f.agent, "agent", "", "the agent to follow when the token is the admin token")
	c.fs.Int64Var(&f.after, "after", -1, "resume after this sequence (default: only what arrives from now on, or the --state file's cursor)")
	c.fs.StringVar(&f.state, "state", "", "file that keeps the cursor, so a restarted process resumes where the last one stopped (default for a registered project: one in your config folder)")
	f.sessionFlag(c)
	c.fs.StringVar(&f.sessionName, "session-name", "", "the session's name, if it has one (default: "+envClaudeSessionName+")")
	c.fs.BoolVar(&f.register, "register", false, "with no project named and no token, register the current folder first when it is in no project (crosschat-relay register)")
	if name == "monitor" {
		c.fs.StringVar(&f.format, "format", formatTask, "line format: task (CROSSCHAT_TASK and CROSSCHAT_UPDATE lines) or message (one CROSSCHAT_MESSAGE line per task or update)")
	}
	if err := c.parse(args); err != nil {
		return nil, nil, err
	}
	if len(c.args) == 1 {
		f.project = c.args[0]
		if strings.TrimSpace(f.token) != "" || f.agent != "" {
			return nil, nil, fmt.Errorf("%w: %s: name the project (%s) or give --token/--agent, not both", errUsage, name, f.project)
		}
	}
	return c, f, nil
}

// stream builds the push stream client from the flags, the environment and
// the location flags. The token comes from, in order: the project named as
// the verb's argument, --token (deprecated, with a warning: it shows in the
// process list), CROSSCHAT_TOKEN, the admin token with --agent, the
// registered project (CROSSCHAT_PROJECT_ID, else the nearest registered
// folder at or above the working folder).
func (f *liveFlags) stream(c *command, env func(string) string) (*client.PushStream, error) {
	token := ""
	if f.project == "" {
		token = strings.TrimSpace(f.token)
		f.tokenFrom = "the token given with --token"
		if token != "" {
			fmt.Fprintf(c.stderr, "crosschat-relay %s: warning: --token puts the token in the process list, where every user of this computer can read it; set %s or run `crosschat-relay register` in the project folder instead\n", c.fs.Name(), envAgentToken)
		}
		if token == "" {
			token = strings.TrimSpace(env(envAgentToken))
			f.tokenFrom = "the token in " + envAgentToken
		}
	}
	adminTok := false
	if token == "" && f.agent != "" {
		tok, err := c.cfg.AdminToken(false)
		if err != nil {
			return nil, err
		}
		token, adminTok = tok, true
		f.tokenFrom = "the admin token"
	}
	projectBase := ""
	if token == "" {
		p, err := findProject(f.project, env)
		if errors.Is(err, errNoProject) && f.register {
			var r registered
			r, err = registerProject(c, "", "", env)
			p = r.Project
		}
		if errors.Is(err, errNoProject) {
			return nil, fmt.Errorf("%w: %v: name the project (crosschat-relay %s ID), run it in a registered project's folder (crosschat-relay register makes one), or set %s to an agent's token", errUsage, err, c.fs.Name(), envAgentToken)
		}
		var agents []relay.Agent
		if errors.As(err, new(unregistered)) && c.call("Agents", "List", &agents) == nil &&
			slices.ContainsFunc(agents, func(a relay.Agent) bool { return a.Slug == strings.ToLower(f.project) }) {
			return nil, fmt.Errorf("%w: %q is an agent of the relay, not a project registered on this computer: follow it with crosschat-relay %s --agent %s (with the admin token)", errUsage, f.project, c.fs.Name(), strings.ToLower(f.project))
		}
		if err != nil {
			return nil, err
		}
		token = p.Token
		f.tokenFrom = "the token kept for the project " + p.ID
		f.tokenFix = "`crosschat-relay register` in its folder says what to do"
		if !locationGiven(c.fs, env) {
			projectBase = p.Relay
		}
		if f.after < 0 {
			if f.state == "" {
				if f.state, err = projectCursorFile(p.ID, c.fs.Name()); err != nil {
					return nil, err
				}
			}
			if _, err := os.Stat(f.state); errors.Is(err, os.ErrNotExist) {
				// Registration opened the stream: everything since is
				// there. A channel's first cursor starts where the
				// monitor's is, so it does not replay the project's past.
				f.after = 0
				if c.fs.Name() == "channel" {
					if mon, err := projectCursorFile(p.ID, "monitor"); err == nil {
						if n, err := readCursor(mon); err == nil && n > 0 {
							f.after = n
						}
					}
				}
			}
		}
	}
	base := strings.TrimSpace(f.url)
	if base == "" && !locationFlagged(c.fs) { // flags win over the environment
		base = strings.TrimSpace(env(envRelayURL))
		if base == "" {
			base = strings.TrimSpace(env(envMCPURL))
		}
	}
	if base == "" {
		base = projectBase
	}
	if base == "" {
		base = "http://" + c.addr()
	}
	if adminTok {
		// The admin token goes only to a relay that proves it holds it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := client.New(strings.TrimSuffix(strings.TrimRight(base, "/"), "/mcp"), token).Verify(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	after := f.after
	if after < 0 && f.state != "" {
		saved, err := readCursor(f.state)
		if err != nil {
			return nil, err
		}
		after = saved
	}
	session, name, err := f.liveSession(env)
	if err != nil {
		return nil, err
	}
	if adminTok {
		// The admin token is never a live session: the relay ignores one
		// named with it (relay.NamesLiveSession), so none is sent.
		session, name = "", ""
	}
	return &client.PushStream{BaseURL: base, Token: token, Agent: f.agent, After: after, Session: session, SessionName: name}, nil
}

// sessionFlag defines --session on c (monitor, channel, send).
func (f *liveFlags) sessionFlag(c *command) {
	c.fs.StringVar(&f.session, "session", "", "the agent-CLI session this serves, so the relay answers it alone (default: "+envClaudeSession+", which Claude Code sets)")
}

// liveSession is the session the flags or Claude Code's environment name,
// checked.
func (f *liveFlags) liveSession(env func(string) string) (id, name string, err error) {
	id, name = strings.TrimSpace(f.session), strings.TrimSpace(f.sessionName)
	if id == "" {
		id = strings.TrimSpace(env(envClaudeSession))
	}
	if name == "" {
		name = strings.TrimSpace(env(envClaudeSessionName))
	}
	if id, err = relay.LiveSessionID("--session", id); err != nil {
		return "", "", fmt.Errorf("%w: %s", errUsage, relay.ErrorMessage(err))
	}
	if name, err = relay.LiveSessionName("--session-name", name); err != nil {
		return "", "", fmt.Errorf("%w: %s", errUsage, relay.ErrorMessage(err))
	}
	if id == "" {
		name = ""
	}
	return id, name, nil
}

// keepReadyCursor has ps write its cursor to the state file (if any) as
// soon as a connection is ready, when the file is behind it: a stream that
// began from now on, or the project's start, is resumed from there by the
// next process even if no event came meanwhile (it began from now again,
// and passed over what arrived while nothing ran). A failure is logged;
// the next event writes the file again.
//
// A cursor the relay answers below the file's (the file was another
// relay's, or its data was reset) is written too, so the next process does
// not ask past the journal again.
//
// It compares with the cursor the stream began after (the file's, read
// once before), not the file again: a read on the stream's path could
// block it.
func keepReadyCursor(ps *client.PushStream, state string) {
	if state == "" {
		return
	}
	ps.OnReady = func(cursor int64) {
		if cursor == ps.After {
			return
		}
		if err := writeCursor(state, cursor); err != nil && ps.Logf != nil {
			ps.Logf("%v", err)
		}
	}
}

// maxCursorFile bounds what readCursor reads of a state file.
const maxCursorFile = 64

// readCursor reads a state file; a missing file is "no cursor" (-1). It
// is opened without waiting (O_NONBLOCK) and read only if it is a regular
// file: a FIFO another user planted at the path would block the read for
// ever, and the monitor with it.
func readCursor(path string) (int64, error) {
	b, err := app.ReadSmallFile(path, maxCursorFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return -1, nil
	case errors.Is(err, app.ErrNotRegular):
		return 0, fmt.Errorf("--state %s: not a regular file", path)
	case err != nil:
		return 0, fmt.Errorf("read --state: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--state %s: not a cursor: %q", path, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// writeCursor replaces the state file atomically.
func writeCursor(path string, n int64) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cursor-*")
	if err != nil {
		return fmt.Errorf("write --state: %w", err)
	}
	_, werr := tmp.WriteString(strconv.FormatInt(n, 10) + "\n")
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write --state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write --state: %w", err)
	}
	return nil
}

// MonitorLine is the one stdout line monitor prints for a push event.
func MonitorLine(e relay.PushEvent) string {
	type task struct {
		TaskID         string `json:"taskId"`
		Title          string `json:"title"`
		Sender         string `json:"sender"`
		Priority       int    `json:"priority,omitempty"`
		Message        string `json:"message"`
		ConversationID string `json:"conversationId,omitempty"`
	}
	type update struct {
		TaskID         string `json:"taskId"`
		Title          string `json:"title"`
		Sender         string `json:"sender"`
		Kind           string `json:"kind"`
		Message        string `json:"message"`
		ConversationID string `json:"conversationId,omitempty"`
	}
	msg := shorten(e.Message, maxMonitorMessage)
	if e.IsTask() {
		b, _ := json.Marshal(task{e.TaskID, e.Title, e.From, e.Priority, msg, e.ConversationID})
		return MonitorTaskPrefix + string(termSafeJSON(b))
	}
	b, _ := json.Marshal(update{e.TaskID, e.Title, e.From, e.Kind, msg, e.ConversationID})
	return MonitorUpdatePrefix + string(termSafeJSON(b))
}

// MessageLine is monitor's line for a push event with --format message,
// the line crosschat's hooks match:
//
//	CROSSCHAT_MESSAGE {"from","source_project_id","to","text","taskId","kind","verification",
//	                   "result","replySession","conversationId","hops"}
//
// kind is "task" for a task, else the update's type (task-completed, …);
// text is a task's title and instructions (the instructions alone when
// their first line is the title), or the update's message. from and
// source_project_id (the name seed 003's tools read) are the other party.
// verification is the signature mark (verified, unverified, mismatch) of
// a task another relay told this one about, and "authenticated" for a
// local one: its sender is an agent of this relay, known by its token. An
// update carries the result of a completion (its first lines), the sender's
// session the answer is for, and the conversation with its hop count.
func MessageLine(e relay.PushEvent) string {
	type message struct {
		From            string `json:"from"`
		SourceProjectID string `json:"source_project_id"`
		To              string `json:"to"`
		Text            string `json:"text"`
		TaskID          string `json:"taskId"`
		Kind            string `json:"kind"`
		Verification    string `json:"verification"`
		Result          string `json:"result,omitempty"`
		ReplySession    string `json:"replySession,omitempty"`
		ConversationID  string `json:"conversationId,omitempty"`
		Hops            *int   `json:"hops,omitempty"`
	}
	text := e.Message
	if e.IsTask() && e.Title != "" && !titleIsFirstLine(e.Title, e.Message) {
		text = e.Title + "\n\n" + e.Message
	}
	m := message{From: e.From, SourceProjectID: e.From, To: e.Agent, Text: shorten(strings.TrimSpace(text), maxMonitorMessage),
		TaskID: e.TaskID, Kind: e.Kind, Verification: e.Signature, ConversationID: e.ConversationID}
	if m.Verification == "" {
		m.Verification = VerificationLocal
	}
	if !e.IsTask() {
		m.Result = firstLines(strings.TrimSpace(e.Result), maxResultLines, maxMonitorMessage)
		m.ReplySession = e.ReplySession
	}
	if e.ConversationID != "" {
		hops := e.Hops
		m.Hops = &hops
	}
	b, _ := json.Marshal(m)
	return MonitorMessagePrefix + string(termSafeJSON(b))
}

// VerificationLocal is the message line's verification of a task whose
// sender is an agent of this relay, authenticated by its token.
const VerificationLocal = "authenticated"

// maxResultLines bounds the lines of a result on the message line.
const maxResultLines = 20

// firstLines is s cut to at most n lines and max runes, the cut marked.
func firstLines(s string, n, max int) string {
	lines := strings.SplitAfterN(s, "\n", n+1)
	cut := len(lines) > n
	if cut {
		s = strings.TrimRight(strings.Join(lines[:n], ""), "\n")
	}
	s = shorten(s, max)
	if cut && !strings.HasSuffix(s, "…") {
		s += "\n…"
	}
	return s
}

// titleIsFirstLine reports whether title is message's first line, or that
// line shortened (as send makes a title).
func titleIsFirstLine(title, message string) bool {
	first, _, _ := strings.Cut(message, "\n")
	first = strings.TrimSpace(first)
	if cut, ok := strings.CutSuffix(title, "…"); ok {
		return strings.HasPrefix(first, cut)
	}
	return first == title
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// monitorCmd prints one line per push event until stopped by a signal:
// CROSSCHAT_TASK {json} or CROSSCHAT_UPDATE {json}. Nothing else goes to
// stdout; diagnostics go to stderr.
func monitorCmd(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return monitorRun(ctx, args, stdout, stderr)
}

// missedLine says that events after cursor may not come: the relay has
// trimmed them, or wrote none before the agent's stream was first opened
// (a cursor such as 0 on a first connection).
func missedLine(cursor int64) string {
	return fmt.Sprintf("events after %d may be missing (trimmed by the relay, or from before this agent's stream was first opened)", cursor)
}

// monitorRun is monitorCmd until ctx ends.
func monitorRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, f, err := parseLive("monitor", args, stdout, stderr)
	if err != nil {
		return err
	}
	line := MonitorLine
	switch f.format {
	case formatTask:
	case formatMessage:
		line = MessageLine
	default:
		return fmt.Errorf("%w: --format %q: use task or message", errUsage, f.format)
	}
	ps, err := f.stream(c, os.Getenv)
	if err != nil {
		return err
	}
	ps.Logf = func(format string, a ...any) { fmt.Fprintf(stderr, "crosschat-relay monitor: "+format+"\n", a...) }
	ps.OnMissed = func(cursor int64) {
		fmt.Fprintf(stderr, "crosschat-relay monitor: %s; call read_updates (and claim_next_task for queued tasks)\n", missedLine(cursor))
	}
	keepReadyCursor(ps, f.state)
	ps.OnEvent = func(e relay.PushEvent) error {
		if _, err := io.WriteString(stdout, line(e)+"\n"); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		if f.state != "" {
			return writeCursor(f.state, e.Sequence)
		}
		return nil
	}
	return f.refusedToken(ps.Run(ctx), ps.BaseURL)
}

// refusedToken is err, said in words when the relay at base refused the
// token (its own answer names the header to send, which the verb did).
func (f *liveFlags) refusedToken(err error, base string) error {
	if relay.ErrorCode(err) != relay.EUnauthorized {
		return err
	}
	fix := f.tokenFix
	if fix == "" {
		fix = "crosschat-relay agents list shows the agents there"
	}
	return fmt.Errorf("the relay at %s does not know %s: it was revoked or replaced, or belongs to another relay; %s", base, f.tokenFrom, fix)
}
