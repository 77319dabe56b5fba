// Package shell is the desktop app around the relay: the native window
// (Desktop, run by main when no verb is given), its geometry and menu, the
// events forwarded to the page, the upstream-import dialog, the self-test CI
// drives, and the presence while the window is hidden: the tray icon and
// the OS notifications. It starts the relay with app.Start and hands the
// bound services what only a window has (Services.AttachWindow,
// Services.TrackFocus); the platform tray and notification code it drives
// is internal/desktop's.
package shell
