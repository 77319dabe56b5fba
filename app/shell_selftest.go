package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/internal/tick"
)

// selfTestEnv names the file the window's report is written to in
// self-test mode (CI starts the app under Xvfb with it set). The file
// beside it with selfTestRouteSuffix added, if there is one, holds the
// dashboard route ("#/activity?task=…") CI wants the window to show.
const selfTestEnv = "CROSSCHAT_SELFTEST"

const selfTestRouteSuffix = ".route"

// maxSelfTestRoute bounds the route read from the route file.
const maxSelfTestRoute = 256

// SelfTest is bound to the window only in self-test mode (CROSSCHAT_SELFTEST
// set), so it is not part of the dashboard's API: the generated bindings
// and the bridge do not have it.
type SelfTest struct{}

// Report records what the window shows in the self-test file (the page's
// JSON report, frontend/src/lib/selftest.ts). CI uses it to prove that the
// native window renders real data from its own relay.
func (SelfTest) Report(text string) error {
	path := os.Getenv(selfTestEnv)
	if path == "" {
		return errors.New("not in self-test mode")
	}
	return writeFileAtomic(path, []byte(text), "write self-test report")
}

// selfTestBind is what the window binds besides the services: SelfTest in
// self-test mode, nothing otherwise.
func selfTestBind() []any {
	if os.Getenv(selfTestEnv) == "" {
		return nil
	}
	return []any{&SelfTest{}}
}

// selfTest calls the page's self-test hook every second with the route CI
// asked for: the page goes there, or, once there, answers through
// SelfTest.Report, which writes the report to the self-test file.
func selfTest(ctx context.Context, rt Runtime) {
	routeFile := os.Getenv(selfTestEnv) + selfTestRouteSuffix
	tick.Every(ctx, time.Second, func() {
		rt.ExecJS(selfTestCall(selfTestRoute(routeFile)))
	})
}

// selfTestCall is the script that calls the page's hook with route, as a
// JSON string.
func selfTestCall(route string) string {
	arg, _ := json.Marshal(route) // a string always encodes
	return `window.crosschatSelfTest && window.crosschatSelfTest(` + string(arg) + `)`
}

// selfTestRoute is the dashboard route in file: "" when there is none, or
// when what is there is not a route ("#/…" on one line, of at most
// maxSelfTestRoute bytes).
func selfTestRoute(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	r := strings.TrimSpace(string(b))
	if !strings.HasPrefix(r, "#/") || len(r) > maxSelfTestRoute || strings.ContainsAny(r, "\r\n") {
		return ""
	}
	return r
}
