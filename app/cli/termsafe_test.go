package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// TestCLIPrintsDataClean ensures a task title and an agent's display name
// holding terminal escapes (ESC sequences, BEL, CR, a C1 CSI, a direction
// override) reach `tasks list` and `agents list` with every control
// character replaced, while --json gives the exact stored value.
func TestCLIPrintsDataClean(t *testing.T) {
	r := startRelay(t)
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(r.Config().Port), "--data-dir", r.Config().DataDir}
	title := "Fix\x1b]0;owned\x07 the build\rDONE \x1b[2J\u009b31m\u202eevil"
	name := "Evil\x1b[1A\x1b[2KName"
	if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "esc-agent", DisplayName: name, ModelSlug: "m", Capabilities: []string{"text-input"}}); err != nil {
		t.Fatalf("create agent: %v", err)
	}
	if _, err := r.Services.Tasks.Post(app.NewTask{RecipientSlug: "esc-agent", Title: title, Instructions: "x", Priority: 2}); err != nil {
		t.Fatalf("post: %v", err)
	}
	for _, tc := range []struct {
		verb []string
		want string
	}{
		{[]string{"tasks", "list"}, "Fix\uFFFD]0;owned\uFFFD the build\uFFFDDONE \uFFFD[2J\uFFFD31m\uFFFDevil"},
		{[]string{"agents", "list"}, "Evil\uFFFD[1A\uFFFD[2KName"},
	} {
		out, errs, code := run(t, append(tc.verb, loc...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.verb, code, errs)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v does not show the value cleaned (%q):\n%q", tc.verb, tc.want, out)
		}
		for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v printed the control character %q:\n%q", tc.verb, bad, out)
			}
		}
	}
	out, errs, code := run(t, append([]string{"tasks", "list", "--json"}, loc...)...)
	var tasks []relay.TaskSummary
	if code != 0 || json.Unmarshal([]byte(out), &tasks) != nil || len(tasks) != 1 || tasks[0].Title != title {
		t.Fatalf("tasks list --json: %d %s %s; want the exact title", code, out, errs)
	}
}
