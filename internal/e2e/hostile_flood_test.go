package e2e_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/sandbox"
)

// Ensure a sandboxed run cannot lock the relay's other clients out by
// sending wrong tokens: with the real binary running as an unprivileged
// user, a run sends 60 wrong tokens from 127.0.0.2 to .6 (one client: the
// guessing is limited, answered 429), then its own run token still works,
// and so do another agent's token and a CLI verb (the admin token) after
// it. Before, each loopback address had a budget of its own, and a spent
// budget answered every token 429, the valid ones too.
func TestRunFloodLocksNoOneOut(t *testing.T) {
	if sandbox.ABI() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	u := newUserRelay(t)
	work := u.home + "/proj"
	u.write(t, work+"/README.md", "x\n", 0o644)
	u.start(t)
	boss := u.agent(t, "boss")
	u.agent(t, "builder")
	url := "http://127.0.0.1:" + strconv.Itoa(u.port) + "/mcp"
	script := u.script(t, "flood.sh", `limited=0; refused=0
i=0; while [ $i -lt 60 ]; do
  code=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.$((2 + i % 5)) -H "Authorization: Bearer wrong-guess-$i" \
    -H 'Content-Type: application/json' -X POST -d '{}' `+url+`)
  [ "$code" = 429 ] && limited=$((limited + 1)); [ "$code" = 401 ] && refused=$((refused + 1))
  i=$((i + 1))
done
echo "refused $refused limited $limited"
own=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $CROSSCHAT_TOKEN" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' -X POST \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' `+url+`)
echo "own-token $own"
`)
	u.must(t, "workers", "set", "builder", "--harness", "custom", "--command", script, "--workdir", work,
		"--allow-sender", "boss", "--timeout", "2m", "--sandbox", "on")
	task, text := u.task(t, boss, "builder", "flood")
	t.Logf("%s: %s", task.Status, text)
	if !strings.Contains(text, "refused 10 limited 50") {
		t.Errorf("the wrong tokens from 127.0.0.2-6 were not limited as one client's: %s", text)
	}
	if !strings.Contains(text, "own-token 200") {
		t.Errorf("the run's own token was locked out: %s", text)
	}
	var me map[string]any
	u.call(t, boss.token, "whoami", map[string]any{}, &me) // fails the test on a 429
	if b, _ := json.Marshal(me); !strings.Contains(string(b), `"boss"`) {
		t.Errorf("whoami as boss after the flood: %s", b)
	}
	if out := u.must(t, "agents", "list"); !strings.Contains(out, "builder") {
		t.Errorf("a CLI verb after the flood: %s", out)
	}
}
