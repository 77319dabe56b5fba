// Package app is the composition root. It wires the store, the MCP
// handler, the HTTP layer, the workers and the mesh into a running relay
// (Start, and Serve for `crosschat-relay serve`), and holds the services
// bound to the window, whose exported methods are the dashboard's whole API
// (the native window through Wails bindings, the browser through /bridge);
// they stay in this package so the generated bindings keep their paths.
// The desktop shell (the window, its menu, the tray and notifications) is
// app/shell and the CLI verbs are app/cli; both import this package.
package app
