// Package app is the composition root and the only Wails-aware package. It
// wires the store, the MCP handler and the HTTP layer into a running relay,
// holds the bound services the dashboard calls (the native window through
// Wails bindings, the browser through /bridge), and runs the commands of the
// crosschat-relay binary.
package app
