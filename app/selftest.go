package app

import (
	"errors"
	"os"
)

// SelfTestEnv names the file the window's report is written to in
// self-test mode (CI starts the app under Xvfb with it set). The file
// beside it with selfTestRouteSuffix added, if there is one, holds the
// dashboard route ("#/activity?task=…") CI wants the window to show.
const SelfTestEnv = "CROSSCHAT_SELFTEST"

// SelfTest is bound to the window only in self-test mode (CROSSCHAT_SELFTEST
// set), so it is not part of the dashboard's API: the generated bindings
// and the bridge do not have it.
type SelfTest struct{}

// Report records what the window shows in the self-test file (the page's
// JSON report, frontend/src/lib/selftest.ts). CI uses it to prove that the
// native window renders real data from its own relay.
func (SelfTest) Report(text string) error {
	path := os.Getenv(SelfTestEnv)
	if path == "" {
		return errors.New("not in self-test mode")
	}
	return WriteFileAtomic(path, []byte(text), "write self-test report")
}

// SelfTestBind is what the window binds besides the services: SelfTest in
// self-test mode, nothing otherwise.
func SelfTestBind() []any {
	if os.Getenv(SelfTestEnv) == "" {
		return nil
	}
	return []any{&SelfTest{}}
}
