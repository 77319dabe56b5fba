//go:build dev || production || bindings

package shell

// WindowBuild is true in a build with Wails' build tags (wails build, wails
// dev, wails generate): it opens the desktop window.
const WindowBuild = true
