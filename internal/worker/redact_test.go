package worker

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a secret a run prints across output lines (`xxd -p api-token`, 60
// columns a line, one step per line from the plain output presets) never
// reaches the run log whole: not when the lines merge into one step, not
// across the step boundary the merge limit makes, and, when a batch was
// written between two lines, the later line's part is hidden (the earlier
// part was written already).
func TestRecorderRedactsAcrossLines(t *testing.T) {
	tok := relay.NewAdminToken()
	h := hex.EncodeToString([]byte(tok + "\n"))
	var lines []string
	for len(h) > 60 {
		lines, h = append(lines, h[:60]), h[60:]
	}
	lines = append(lines, h)
	tests := []struct {
		name string
		// before are output lines added first; flush writes a batch
		// after the first line of the secret.
		before []string
		flush  bool
	}{
		{"one step", []string{"$ xxd -p api-token"}, false},
		{"across the merge limit", []string{strings.Repeat("o", mergeOutputRunes-70)}, false},
		{"across a batch", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &appendOnly{}
			rec := newRecorder(rel, "t", "abcd1234", time.Now, time.Hour, tok)
			for _, l := range tt.before {
				rec.add(relay.ActivityEntry{Kind: relay.StepOutput, Text: l})
			}
			for i, l := range lines {
				rec.add(relay.ActivityEntry{Kind: relay.StepOutput, Text: l})
				if i == 0 && tt.flush {
					rec.flush()
				}
			}
			rec.add(relay.ActivityEntry{Kind: relay.StepOutput, Text: "$ done"})
			if err := rec.close(); err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, e := range rel.all() {
				texts = append(texts, e.Text)
			}
			flat := strings.ReplaceAll(strings.Join(texts, ""), "\n", "")
			full := hex.EncodeToString([]byte(tok))
			for i, l := range lines {
				if tt.flush && i == 0 || len(l) < 16 {
					continue // written before the next line came; too short to tell
				}
				if strings.Contains(flat, l) {
					t.Errorf("line %d of the hex of the secret is in the run log: %q", i, texts)
				}
			}
			if strings.Contains(flat, full) || !strings.Contains(flat, "[hidden]") || !strings.HasSuffix(flat, "$ done") {
				t.Errorf("run log: %q", texts)
			}
		})
	}
}
