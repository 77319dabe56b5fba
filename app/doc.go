// Package app is the composition root and the only Wails-aware package. It
// wires the store, the MCP handler and the HTTP layer into a running relay
// (Start, and Serve for `crosschat-relay serve`), holds the bound services
// the dashboard calls (the native window through Wails bindings, the browser
// through /bridge), and runs the desktop shell: the window, its menu, the
// tray and notifications (the shell_*.go files, Desktop). The CLI verbs are
// in app/cli, which imports this package.
package app
