package cli

import "time"

// MonitorRun runs `crosschat-relay monitor` until ctx ends, so a test can
// stop it without a signal.
var MonitorRun = monitorRun

// SetRegisterWait sets how long register waits for the relay's answers
// until the test ends.
func SetRegisterWait(t interface{ Cleanup(func()) }, d time.Duration) {
	old := registerWait
	registerWait = d
	t.Cleanup(func() { registerWait = old })
}

// ParsePriority is send's --priority reading.
var ParsePriority = parsePriority
