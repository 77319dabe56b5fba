package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	relaymcp "github.com/crosschat/crosschat-relay/internal/mcp"
	"github.com/crosschat/crosschat-relay/internal/testkit"
)

// stdioChannel serves a channel for a new agent over pipes, as Claude Code
// starts it, and returns a function that sends one request and waits for
// its answer, and the channel's stderr.
func stdioChannel(t *testing.T) (func(id int, method string, params map[string]any) map[string]any, *testkit.Buffer) {
	t.Helper()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	stderr := &testkit.Buffer{}
	ch, err := relaymcp.NewChannel(ctx, relaymcp.ChannelOptions{MCPURL: e.url(), Token: e.agent("bob"), Version: "test", Stderr: stderr})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ch.Serve(ctx, inR, outW) }()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
		ch.Close()
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	ask := func(id int, method string, params map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		for lines.Scan() {
			var msg map[string]any
			if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
				t.Fatalf("%s: not JSON: %q", method, lines.Text())
			}
			if msg["id"] == float64(id) {
				return msg
			}
		}
		t.Fatalf("%s: no answer: %v", method, lines.Err())
		return nil
	}
	return ask, stderr
}

// modernMeta are the params of a 2026-07-28 request from Claude Code 2.1.332.
func modernParams() map[string]any {
	return map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "claude-code", "version": "2.1.332"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
}

// TestChannelOffersLegacyProtocolOnly drives the channel's stdio server the
// way Claude Code 2.1.332 does: server/discover at 2026-07-28 first, then
// (offered no modern revision) initialize. The channel must not offer the
// modern era, which has no path for channel notifications, and the legacy
// handshake must still work as Claude Code 2.1.197 uses it.
func TestChannelOffersLegacyProtocolOnly(t *testing.T) {
	ask, stderr := stdioChannel(t)
	discover := ask(1, "server/discover", modernParams())
	res, _ := discover["result"].(map[string]any)
	var offered []string
	for _, v := range asSlice(res["supportedVersions"]) {
		offered = append(offered, v.(string))
	}
	if len(offered) == 0 {
		t.Fatalf("server/discover: no supportedVersions: %v", discover)
	}
	for _, v := range offered {
		if mcp.IsModernProtocol(v) {
			t.Errorf("server/discover offers the modern revision %s (no channel notifications there): %v", v, offered)
		}
	}
	if !slices.Contains(offered, mcp.ProtocolVersion20251125) {
		t.Errorf("server/discover does not offer %s: %v", mcp.ProtocolVersion20251125, offered)
	}
	if caps, _ := res["capabilities"].(map[string]any); !strings.Contains(mustJSON(caps), relaymcp.ChannelCapability) {
		t.Errorf("server/discover: capabilities lack %s: %v", relaymcp.ChannelCapability, caps)
	}

	init := ask(2, "initialize", map[string]any{"protocolVersion": mcp.ProtocolVersion20251125,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "claude-code", "version": "2.1.332"}})
	ir, _ := init["result"].(map[string]any)
	if got := ir["protocolVersion"]; got != mcp.ProtocolVersion20251125 {
		t.Errorf("initialize: protocolVersion %v, want %s (%v)", got, mcp.ProtocolVersion20251125, init)
	}
	if !strings.Contains(mustJSON(ir["capabilities"]), relaymcp.ChannelCapability) {
		t.Errorf("initialize: capabilities lack %s: %v", relaymcp.ChannelCapability, ir["capabilities"])
	}
	if list := ask(3, "tools/list", map[string]any{}); len(asSlice(asMap(list["result"])["tools"])) == 0 {
		t.Errorf("tools/list: %v", list)
	}
	if s := stderr.String(); strings.Contains(s, "monitor") {
		t.Errorf("stderr warns a client that can take channels: %q", s)
	}
}

// TestChannelSaysWhenEventsCannotArrive: a client that lists the tools on
// the 2026-07-28 protocol, without initialize, has no path for channel
// events; `channel` says so on stderr and names the monitor way.
func TestChannelSaysWhenEventsCannotArrive(t *testing.T) {
	ask, stderr := stdioChannel(t)
	if list := ask(1, "tools/list", modernParams()); len(asSlice(asMap(list["result"])["tools"])) == 0 {
		t.Fatalf("tools/list on the modern protocol: %v", list)
	}
	if s := stderr.String(); !strings.Contains(s, "2026-07-28") || !strings.Contains(s, "crosschat-relay monitor") {
		t.Errorf("stderr %q does not say that events cannot arrive and name the monitor way", s)
	}
}

func TestChannelClientProblem(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		want          string // "" for none
	}{
		{"claude-code", "2.1.332", ""},
		{"claude-code", "2.1.197", ""},
		{"claude-code", "2.2.0", ""},
		{"claude-code", "", ""},
		{"claude-code", "2.1.80", "older than 2.1.197"},
		{"claude-code", "1.9.999", "older than 2.1.197"},
		{"codex-mcp-client", "0.171.0", "not Claude Code"},
	} {
		got := relaymcp.ChannelClientProblem(mcp.Implementation{Name: tc.name, Version: tc.version})
		if tc.want == "" && got != "" || tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "crosschat-relay monitor")) {
			t.Errorf("%s %s: %q, want %q", tc.name, tc.version, got, tc.want)
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
