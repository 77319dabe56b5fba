package cli

// MonitorRun runs `crosschat-relay monitor` until ctx ends, so a test can
// stop it without a signal.
var MonitorRun = monitorRun
