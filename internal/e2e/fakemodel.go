// Package e2e holds the end-to-end tests that drive the real agent CLIs
// (Claude Code, Codex, Gemini CLI) through a whole relay, and the scripted
// fake model endpoint they talk to instead of a real model. Nothing here is
// used by the relay itself; the tests skip unless CROSSCHAT_E2E_CLIS is set.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// APIs a FakeModel speaks.
const (
	// Anthropic is the Anthropic Messages API (POST /v1/messages), for Claude Code.
	Anthropic = "anthropic"
	// Responses is the OpenAI Responses API (POST /v1/responses), for Codex.
	Responses = "responses"
	// Gemini is the Gemini API (:streamGenerateContent, :generateContent), for Gemini CLI.
	Gemini = "gemini"
)

// ChangesMarker is the text of the relay's prompt in a request-changes
// round: "… asked for changes. Changes requested: …" when the CLI resumes
// its session, "- Changes requested: …" among the earlier rounds when not.
const ChangesMarker = "Changes requested:"

// FinalPrefix and Round2Prefix start the fake model's final answers of the
// first round and of the request-changes round.
const (
	FinalPrefix  = "MOCK_FINAL: "
	Round2Prefix = "MOCK_FINAL_ROUND2: "
)

// Script is what the fake model does in the first round, one step per tool
// result it has already seen: list the relay's agents (MCP list_agents), hand
// a task off (MCP post_task), optionally run a shell command, write a file,
// then answer FinalPrefix + Marker. In a request-changes round (a prompt with
// ChangesMarker) it answers Round2Prefix + Marker at once, after checking that
// the request carries the first round's conversation.
type Script struct {
	// Marker identifies the task in answers and file contents.
	Marker string
	// Workdir is the worker's working folder, where the file is written.
	Workdir string
	// File is the name of the file written in Workdir.
	File string
	// HandOffTo is the agent slug of the post_task hand-off.
	HandOffTo string
	// Command is a shell command run before the file is written (Codex
	// only: Claude Code and Gemini CLI refuse shell commands in the
	// relay's headless modes); "" for none.
	Command string
	// Session switches to the session script of the session worker tests
	// (see SessionTurn); the fields above other than Marker are unused.
	Session bool
}

// Seen is what the fake model observed, for the test to assert on.
type Seen struct {
	// Requests lists "METHOD path" of every request.
	Requests []string
	// ToolsOffered are the tool names of the last main-loop request.
	ToolsOffered []string
	// MCPOffered tells whether the relay's list_agents was among the tools,
	// sent up front or deferred behind ToolSearch.
	MCPOffered bool
	// Deferred are the MCP tools a request named as deferred (Claude Code
	// 2.1.332 and later: loaded through ToolSearch), first request first.
	Deferred []string
	// ToolSearches are the ToolSearch queries the fake model made.
	ToolSearches []string
	// Results maps a tool step ("list_agents", "post_task", "command",
	// "file") to the text of the result the CLI sent back.
	Results map[string]string
	// Round2 is true once a request-changes round was answered.
	Round2 bool
	// Round2History tells whether that round's request carried the first
	// round's conversation: an assistant message with the first final
	// answer and the first round's tool results.
	Round2History bool
	// Round2Detail explains Round2History.
	Round2Detail string
	// Problems are requests the fake model did not expect.
	Problems []string
	// LastBody is the body of the last main-loop request (for failures).
	LastBody string
	// ChannelBodies are the bodies of requests that carry a Claude Code
	// channel event (a "<channel source=" message).
	ChannelBodies []string
	// SessionRequests are the request tokens of the session script's
	// main-loop requests, in order ("" for a person's own turn).
	SessionRequests []string
	// SessionTurns are the delivered turns of the session script, in order.
	SessionTurns []SessionTurn
	// Held are the request tokens whose answers were held.
	Held []string
}

// FakeModel is a scripted model endpoint on loopback.
type FakeModel struct {
	api    string
	script Script
	srv    *http.Server
	ln     net.Listener

	mu      sync.Mutex
	seen    Seen
	release chan struct{} // closed by Release (session script)
}

// StartFakeModel starts a fake model speaking api on 127.0.0.1:0. Close it
// when done.
func StartFakeModel(api string, s Script) (*FakeModel, error) {
	switch api {
	case Anthropic, Responses, Gemini:
	default:
		return nil, fmt.Errorf("fake model: unknown API %q", api)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake model: listen: %w", err)
	}
	f := &FakeModel{api: api, script: s, ln: ln, seen: Seen{Results: map[string]string{}}, release: make(chan struct{})}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the endpoint's base URL (http://127.0.0.1:port, no trailing slash).
func (f *FakeModel) URL() string { return "http://" + f.ln.Addr().String() }

// Close stops the endpoint.
func (f *FakeModel) Close() error {
	f.Release() // held answers go, so their handlers end
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake model: shutdown: %w", err)
	}
	return nil
}

// Seen returns a copy of what the fake model observed so far.
func (f *FakeModel) Seen() Seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.seen
	s.Requests = append([]string(nil), s.Requests...)
	s.ToolsOffered = append([]string(nil), s.ToolsOffered...)
	s.Deferred = append([]string(nil), s.Deferred...)
	s.ToolSearches = append([]string(nil), s.ToolSearches...)
	s.Problems = append([]string(nil), s.Problems...)
	s.ChannelBodies = append([]string(nil), s.ChannelBodies...)
	s.SessionRequests = append([]string(nil), s.SessionRequests...)
	s.SessionTurns = append([]SessionTurn(nil), s.SessionTurns...)
	s.Held = append([]string(nil), s.Held...)
	s.Results = make(map[string]string, len(f.seen.Results))
	for k, v := range f.seen.Results {
		s.Results[k] = v
	}
	return s
}

func (f *FakeModel) problem(format string, a ...any) {
	f.mu.Lock()
	f.seen.Problems = append(f.seen.Problems, fmt.Sprintf(format, a...))
	f.mu.Unlock()
}

func (f *FakeModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.seen.Requests = append(f.seen.Requests, r.Method+" "+r.URL.Path)
	if strings.Contains(string(body), "<channel source=") {
		f.seen.ChannelBodies = append(f.seen.ChannelBodies, string(body))
	}
	f.mu.Unlock()
	if r.Method == http.MethodHead || r.Method == http.MethodGet {
		w.WriteHeader(http.StatusOK)
		return
	}
	var req map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			f.problem("%s %s: body is not JSON: %v", r.Method, r.URL.Path, err)
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
	}
	path := r.URL.Path
	switch {
	case f.api == Anthropic && strings.HasPrefix(path, "/v1/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 10})
	case f.api == Anthropic && strings.HasPrefix(path, "/v1/messages"):
		f.anthropic(w, r, req, string(body))
	case f.api == Responses && strings.HasSuffix(path, "/responses"):
		f.responses(w, r, req, string(body))
	case f.api == Gemini && strings.Contains(path, ":streamGenerateContent"):
		f.gemini(w, req, string(body), true)
	case f.api == Gemini && strings.Contains(path, ":generateContent"):
		f.gemini(w, req, string(body), false)
	case f.api == Gemini && strings.Contains(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 10})
	default:
		f.problem("unexpected request %s %s", r.Method, path)
		http.NotFound(w, r)
	}
}
