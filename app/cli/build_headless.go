//go:build !dev && !production && !bindings

package cli

// windowBuild is false in a build without Wails' build tags (`make
// install`, the headless package): the same tags as app/shell's
// WindowBuild, which this package may not import. Its autostart entry
// would start a program that has no window, so enable refuses.
const windowBuild = false
