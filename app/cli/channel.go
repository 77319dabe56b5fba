package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// channelCmd is `crosschat-relay channel`: a stdio MCP server for Claude
// Code that serves the relay's tools by proxy and sends a
// notifications/claude/channel for each event of the agent's push stream.
// stdout carries MCP only; diagnostics go to stderr.
func channelCmd(args []string, version string, stdin io.Reader, stdout, stderr io.Writer) error {
	// The push stream's goroutine and the MCP side both write to stderr.
	stderr = &syncWriter{w: stderr}
	c, f, err := parseLive("channel", args, stdout, stderr)
	if err != nil {
		return err
	}
	if f.agent != "" {
		return fmt.Errorf("%w: channel needs the agent's own token (%s or a registered project), not --agent", errUsage, envAgentToken)
	}
	ps, err := f.stream(c, os.Getenv)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "crosschat-relay channel: "+format+"\n", a...) }
	ps.Logf = logf

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mcpURL := strings.TrimSuffix(strings.TrimRight(ps.BaseURL, "/"), "/mcp") + "/mcp"
	ch, err := mcp.NewChannel(ctx, mcp.ChannelOptions{MCPURL: mcpURL, Token: ps.Token, Version: version, Stderr: stderr, Session: ps.Session})
	if err != nil {
		return f.refusedToken(err, ps.BaseURL)
	}
	defer ch.Close()
	ps.OnMissed = func(cursor int64) { logf("%s", missedLine(cursor)) }
	keepReadyCursor(ps, f.state)
	ps.OnEvent = func(e relay.PushEvent) error {
		if err := ch.Notify(ctx, e); err != nil {
			return err
		}
		if f.state != "" {
			return writeCursor(f.state, e.Sequence)
		}
		return nil
	}
	streamDone := make(chan error, 1)
	sctx, cancelStream := context.WithCancel(ctx)
	go func() {
		err := f.refusedToken(ps.Run(sctx), ps.BaseURL)
		if err != nil {
			logf("push stream stopped: %v", err)
		}
		streamDone <- err
	}()
	if ps.Session != "" {
		logf("serving %d relay tools on stdio for the session %s; push stream from %s", ch.ToolCount(), ps.Session, ps.BaseURL)
	} else {
		logf("serving %d relay tools on stdio; push stream from %s", ch.ToolCount(), ps.BaseURL)
	}

	serveErr := ch.Serve(ctx, stdin, stdout)
	cancelStream()
	<-streamDone
	if ctx.Err() != nil { // stopped by a signal
		return nil
	}
	if serveErr != nil && serveErr != io.EOF && !strings.Contains(serveErr.Error(), "EOF") {
		return fmt.Errorf("stdio: %w", serveErr)
	}
	return nil
}

// liveSetupText is the live-session part of `agents add`'s output.
func liveSetupText(token, baseURL string) string {
	return "Live sessions (work arrives in an open chat, docs/live-sessions.md):\n" +
		"  Claude Code channel: put this in the project's .mcp.json (it holds the token: keep it out of version control)\n  " +
		strings.ReplaceAll(web.ChannelMCPJSON(token, baseURL), "\n", "\n  ") + "\n" +
		"  then start Claude Code in that folder with\n" +
		"  " + web.ChannelStartCommand + "\n" +
		"  Any session with a Monitor tool: CROSSCHAT_TOKEN=" + token + " crosschat-relay monitor --url " + baseURL + "\n"
}

// syncWriter serialises writes to w, which goroutines share.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to w, one writer at a time.
func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
