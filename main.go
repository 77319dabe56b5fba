// Command crosschat-relay is a durable task inbox for AI agents, served over
// MCP, in a native desktop app. With no command it opens the window; `serve`
// runs the same relay headless; other verbs talk to a running relay.
package main

import (
	"embed"
	"io/fs"
	"os"
	"strings"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/cli"
	"github.com/crosschat/crosschat-relay/app/shell"
)

//go:embed all:frontend/dist
var dist embed.FS

//go:embed build/appicon.png
var icon []byte

//go:embed build/linux/icons/32.png
var trayIcon []byte

// The Claude Code plugin's marketplace, for `crosschat-relay claude-plugin`.
//
//go:embed all:build/claude-plugin
var claudePlugin embed.FS

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	assets, err := fs.Sub(dist, "frontend/dist")
	if err != nil {
		panic(err) // the embed path is fixed at compile time
	}
	args := os.Args[1:]
	switch {
	case len(args) > 0 && strings.HasPrefix(strings.ToLower(args[0]), shell.URLScheme+":"):
		// A clicked Windows toast: crosschat-relay://task/<id> opens the window on it.
		os.Exit(shell.Desktop(args, shell.DesktopOptions{Version: version, Assets: assets, Icon: icon, TrayIcon: trayIcon}, os.Stderr))
	case len(args) > 0 && args[0] == "serve":
		os.Exit(app.Serve(args[1:], assets, version, os.Stdout, os.Stderr))
	case len(args) > 0 && (!strings.HasPrefix(args[0], "-") || args[0] == "--version" || args[0] == "-v" || args[0] == "--help" || args[0] == "-h"):
		if cli.ClaudePlugin, err = fs.Sub(claudePlugin, "build/claude-plugin"); err != nil {
			panic(err) // the embed path is fixed at compile time
		}
		os.Exit(cli.Command(args, version, os.Stdout, os.Stderr))
	default:
		os.Exit(shell.Desktop(args, shell.DesktopOptions{Version: version, Assets: assets, Icon: icon, TrayIcon: trayIcon}, os.Stderr))
	}
}
