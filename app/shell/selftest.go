package shell

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/tick"
)

const selfTestRouteSuffix = ".route"

// maxSelfTestRoute bounds the route read from the route file.
const maxSelfTestRoute = 256

// selfTest calls the page's self-test hook every second with the route CI
// asked for: the page goes there, or, once there, answers through
// SelfTest.Report, which writes the report to the self-test file.
func selfTest(ctx context.Context, rt app.Runtime) {
	routeFile := os.Getenv(app.SelfTestEnv) + selfTestRouteSuffix
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
