//go:build dev || production || bindings

package cli

// windowBuild is true in a build with Wails' build tags: it opens the
// desktop window, which an autostart entry starts hidden.
const windowBuild = true
