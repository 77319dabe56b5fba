//go:build !dev && !production && !bindings

package shell

// WindowBuild is false in a build without Wails' build tags (`make run`,
// `make install`, the headless package): it has no window, so run bare it
// says to run serve (Desktop) instead of Wails' own error.
const WindowBuild = false
