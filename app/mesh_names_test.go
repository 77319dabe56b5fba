package app_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/mesh"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Ensure a name contest is shown and settled with the verbs: relays A and
// C each have an agent alice; on B, which trusted A first, alice is A's and
// C's is alice@relay-c (mesh names, mesh status --json); `mesh name alice
// --relay relay-c` gives the plain name to C's, renaming A's, and refuses
// a relay that shows no alice.
func TestMeshNameContestThroughCLI(t *testing.T) {
	a := startMeshRelay(t, "relay-a")
	inv, err := a.Services.Mesh.Invite()
	noErr(t, err)
	b := startMeshRelay(t, "relay-b", inv.URL)
	c := startMeshRelay(t, "relay-c", inv.URL)
	for _, r := range []*app.Relay{a, c} {
		_, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "alice", DisplayName: "Alice", ModelSlug: "m", Capabilities: []string{"text-output"}})
		noErr(t, err)
	}
	t.Setenv("CROSSCHAT_API_TOKEN", "")
	loc := []string{"--port", strconv.Itoa(b.Config().Port), "--data-dir", b.Config().DataDir}
	trust := func(name string) {
		waitFor(t, func() bool {
			_, err := b.Services.Mesh.Trust(name, "")
			return err == nil
		}, name+" trusted on B")
	}
	names := func() (out struct {
		Names    []mesh.NameHolder
		Contests []mesh.NameContest
	}) {
		got, errs, code := run(t, append([]string{"mesh", "names", "--json"}, loc...)...)
		if code != 0 || json.Unmarshal([]byte(got), &out) != nil {
			t.Fatalf("mesh names --json: %d %s %s", code, got, errs)
		}
		return out
	}
	holder := func(name string) string {
		for _, n := range names().Names {
			if n.Name == name {
				return n.Relay
			}
		}
		return ""
	}
	trust("relay-a")
	waitFor(t, func() bool { return holder("alice") == "relay-a" }, "alice is relay-a's on B")
	trust("relay-c")
	waitFor(t, func() bool { return holder("alice@relay-c") == "relay-c" }, "C's alice is alice@relay-c on B")

	out, _, code := run(t, append([]string{"mesh", "names"}, loc...)...)
	if code != 0 || !strings.Contains(out, "Contested: alice is relay-a's here; also shown by alice@relay-c (relay-c)") {
		t.Fatalf("mesh names: %d %s", code, out)
	}
	var st app.MeshStatus
	out, _, code = run(t, append([]string{"mesh", "status", "--json"}, loc...)...)
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Names) != 1 || st.Names[0].Holder != "relay-a" {
		t.Fatalf("mesh status --json names: %d %s", code, out)
	}
	_, errs, code := run(t, append([]string{"mesh", "name", "alice"}, loc...)...)
	if code != 2 || !strings.Contains(errs, "--relay") {
		t.Fatalf("mesh name without --relay: %d %s", code, errs)
	}
	_, errs, code = run(t, append([]string{"mesh", "name", "alice", "--relay", "nowhere"}, loc...)...)
	if code != 1 || !strings.Contains(errs, "No relay “nowhere” has been seen") {
		t.Fatalf("mesh name to a relay never seen: %d %s", code, errs)
	}
	out, errs, code = run(t, append([]string{"mesh", "name", "alice", "--relay", "relay-c"}, loc...)...)
	if code != 0 || !strings.Contains(out, "Renamed alice to alice@relay-a") || !strings.Contains(out, "Renamed alice@relay-c to alice") {
		t.Fatalf("mesh name alice --relay relay-c: %d %s %s", code, out, errs)
	}
	if got := holder("alice"); got != "relay-c" {
		t.Fatalf("alice on B after the verb is %q's", got)
	}
	if got := holder("alice@relay-a"); got != "relay-a" {
		t.Fatalf("alice@relay-a on B is %q's", got)
	}
}
