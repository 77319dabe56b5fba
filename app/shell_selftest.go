package app

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/crosschat/crosschat-relay/internal/tick"
)

// selfTestEnv names the file the window's text is written to in self-test
// mode (CI starts the app under Xvfb with it set).
const selfTestEnv = "CROSSCHAT_SELFTEST"

// SelfTest is bound to the window only in self-test mode (CROSSCHAT_SELFTEST
// set), so it is not part of the dashboard's API: the generated bindings
// and the bridge do not have it.
type SelfTest struct{}

// Report records what the window shows in the self-test file. CI uses it
// to prove that the native window renders real data from its own relay.
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

// selfTest asks the page for its text every second; the page answers
// through SelfTest.Report, which writes it to the self-test file.
func selfTest(ctx context.Context, rt Runtime) {
	tick.Every(ctx, time.Second, func() {
		rt.ExecJS(`window.go && window.go.app && window.go.app.SelfTest && window.go.app.SelfTest.Report(document.body.innerText)`)
	})
}
