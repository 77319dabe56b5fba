//go:build tools

// Package tools pins the Wails CLI used to build Crosschat Relay.
//
// wails v2.9.2 pulls golang.org/x/tools v0.17.0, which does not compile on
// current Go; this module bumps x/tools to v0.30.0 so the CLI builds:
//
//	cd build/tools/wails && go build -o ../../../.ci/bin/wails github.com/wailsapp/wails/v2/cmd/wails
package tools

import _ "github.com/wailsapp/wails/v2/cmd/wails"
