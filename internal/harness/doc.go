// Package harness knows the agent command-line tools a worker can run
// headless: their presets (names, binaries, where they live), detection on
// this computer, the exact command of one run (Build), the task prompt
// (Prompt), the parsers that turn their output into live activity steps
// (NewParser), and the writers that add the relay to each tool's own MCP
// settings so its chats can use the relay too (Connect).
//
// It imports only the standard library, internal/relay and internal/runspec
// (the contract it shares with the worker).
package harness
