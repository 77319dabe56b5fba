package cli_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/crosschat/crosschat-relay/internal/relay"
)

// A project is retired on the relay it was registered on, never on the one
// the command's location flags (or CROSSCHAT_PORT) happen to name: there
// an agent of the same name is someone else's. `projects remove` of a
// project of another relay is refused saying which relay, and `register
// --id` moving a folder of another relay retires nothing here.
func TestProjectsRetiredOnTheirOwnRelay(t *testing.T) {
	e := newEveryday(t) // the relay the environment names
	other := startRelay(t)
	otherLoc := []string{"--port", strconv.Itoa(other.Config().Port), "--data-dir", other.Config().DataDir}
	otherURL := "http://127.0.0.1:" + strconv.Itoa(other.Config().Port)

	shared := e.folder(t, "shared")
	e.register(t, shared, otherLoc...)
	createAgent(t, e.r, "shared") // made by hand on this relay: not the project

	_, errs, code := run(t, "projects", "remove", "shared")
	if code == 0 || !strings.Contains(errs, otherURL) {
		t.Fatalf("projects remove of another relay's project: exit %d, %q", code, errs)
	}
	if a, ok := e.slugs(t)["shared"]; !ok || !a.HasToken {
		t.Fatalf("the agent \"shared\" of the relay the flags named was retired for another relay's project: %+v", a)
	}
	if ps := storedProjects(t, e.store); len(ps) != 1 || ps[0].ID != "shared" {
		t.Fatalf("the store lost the project it did not remove: %+v", ps)
	}
	// With that relay's flags it is removed there.
	if _, errs, code := run(t, append([]string{"projects", "remove", "shared"}, otherLoc...)...); code != 0 {
		t.Fatalf("projects remove on its own relay: exit %d, %q", code, errs)
	}
	if agents, err := other.Services.Agents.List(); err != nil || strings.Contains(slugList(agents), "shared") {
		t.Fatalf("the project's agent is still on its relay: %v %v", slugList(agents), err)
	}

	// A folder of the other relay moved to a new id on this one: "old"
	// here is someone else's and stays.
	moved := e.folder(t, "moved")
	e.register(t, moved, append([]string{"--id", "old"}, otherLoc...)...)
	createAgent(t, e.r, "old")
	_, errs, code = run(t, "register", moved, "--id", "new")
	if a, ok := e.slugs(t)["old"]; !ok || !a.HasToken {
		t.Fatalf("register --id retired this relay's \"old\" for the other relay's project (exit %d, %q): %+v", code, errs, a)
	}
	if !strings.Contains(errs, otherURL) {
		t.Errorf("register --id does not say the old id stays on its relay: exit %d, %q", code, errs)
	}
}

// slugList is the agents' slugs, space-separated.
func slugList(agents []relay.Agent) string {
	s := make([]string, 0, len(agents))
	for _, a := range agents {
		s = append(s, a.Slug)
	}
	return strings.Join(s, " ")
}
