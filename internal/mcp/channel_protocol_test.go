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
)

// TestChannelOffersLegacyProtocolOnly drives the channel's stdio server the
// way Claude Code 2.1.332 does: server/discover at 2026-07-28 first, then
// (offered no modern revision) initialize. The channel must not offer the
// modern era, which has no path for channel notifications, and the legacy
// handshake must still work as Claude Code 2.1.197 uses it.
func TestChannelOffersLegacyProtocolOnly(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ch, err := relaymcp.NewChannel(ctx, relaymcp.ChannelOptions{MCPURL: e.url(), Token: e.agent("bob"), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ch.Serve(ctx, inR, outW) }()
	defer func() {
		inW.Close()
		cancel()
		<-done
	}()
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

	discover := ask(1, "server/discover", map[string]any{"_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "claude-code", "version": "2.1.332"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}})
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
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
