package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// monitor's lines are JSON for a session's Monitor tool, and also what a
// person who runs monitor in a terminal sees: a C1 control (U+009B is CSI,
// U+009D OSC to terminals that take them in UTF-8) or a direction override
// in a task's title or message, which json.Marshal writes as they are, is
// written as a \u escape instead; the line decodes to the same text.
func TestMonitorLinesEscapeTerminalControls(t *testing.T) {
	title := "c1 \u009b2J \u009d0;pwn\u009c rtl \u202e end"
	msg := "body \u0085 \u2066x\u2069 \u200f"
	e := relay.PushEvent{Agent: "web", Kind: "task", TaskID: "t1", Title: title, From: "api", Message: msg}
	for _, line := range []string{cli.MonitorLine(e), cli.MessageLine(e)} {
		for _, r := range line {
			if (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f {
				t.Errorf("%U reaches the terminal as it is: %q", r, line)
			}
		}
		prefix, body, _ := strings.Cut(line, " ")
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("%s line is not JSON: %v: %q", prefix, err, line)
		}
		if got["title"] != nil && (got["title"] != title || got["message"] != msg) {
			t.Errorf("%s line decodes to other text: %q", prefix, got)
		}
		if got["text"] != nil && got["text"] != title+"\n\n"+msg {
			t.Errorf("%s line decodes to other text: %q", prefix, got["text"])
		}
	}
}
