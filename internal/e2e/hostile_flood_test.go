//go:build linux

package e2e_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/sandbox"
	"github.com/crosschat/crosschat-relay/internal/testkit"
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
		testkit.SkipWithout(t, testkit.RequireLandlock, "this kernel has no Landlock")
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
	// One client's budget: 10 refused (401), the rest limited (429), plus
	// one more refused per 3 s the flood took. Five budgets of their own
	// would refuse 50 and limit 10, so "most were limited" tells the two
	// apart without counting on the flood's speed.
	var refused, limited int
	i := strings.Index(text, "refused ")
	if i < 0 {
		t.Fatalf("the run did not report the flood's counts: %s", text)
	}
	if _, err := fmt.Sscanf(text[i:], "refused %d limited %d", &refused, &limited); err != nil || refused+limited != 60 {
		t.Fatalf("the flood's counts (%v): %s", err, text)
	}
	if refused < 10 || limited < 40 {
		t.Errorf("the wrong tokens from 127.0.0.2-6 were not limited as one client's (refused %d, limited %d): %s", refused, limited, text)
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
