package desktop

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
)

// TrayState is what the tray icon shows.
type TrayState int

// Tray icon states, in precedence order (the first that applies wins).
const (
	TrayRunning   TrayState = iota // all is well
	TrayAttention                  // tasks need the person (blocked, waiting for review)
	TrayError                      // the relay or a worker has an error
	TrayPaused                     // workers are paused
)

// TrayItem is one task in the tray's "needs attention" list.
type TrayItem struct {
	TaskID string
	Title  string
}

// TrayModel is everything the tray shows.
type TrayModel struct {
	State     TrayState
	Tooltip   string
	Attention []TrayItem
	Paused    bool
	// StartAtLogin and Notifications are the checkboxes' states.
	StartAtLogin  bool
	Notifications bool
}

// TrayActions are what the menu items do. Each runs on its own goroutine.
type TrayActions struct {
	Open             func()
	OpenTask         func(taskID string)
	SetPaused        func(paused bool)
	SetStartAtLogin  func(on bool)
	SetNotifications func(on bool)
	OpenDataFolder   func()
	Quit             func()
}

// ErrNoTray is returned by StartTray where the desktop has no tray (macOS);
// the app then puts the tray's items in its application menu.
var ErrNoTray = errors.New("no tray icon on this system; the app menu has the same items")

// MaxTrayAttention is how many attention tasks the menu lists.
const MaxTrayAttention = 5

// Menu item titles (CI finds the items by them over D-Bus).
const (
	TrayOpenTitle          = "Open dashboard"
	TrayPauseTitle         = "Pause workers"
	TrayResumeTitle        = "Resume workers"
	TrayStartAtLoginTitle  = "Start at login"
	TrayNotificationsTitle = "Notifications"
	TrayDataFolderTitle    = "Open data folder"
	TrayQuitTitle          = "Quit"
)

// StateIcons draws the four state icons from the app icon (PNG): a
// coloured dot in the lower right corner for attention (amber), error
// (red) and paused (grey). The result is PNG, or ICO on Windows.
func StateIcons(base []byte) (map[TrayState][]byte, error) {
	img, err := png.Decode(bytes.NewReader(base))
	if err != nil {
		return nil, fmt.Errorf("tray icon: %w", err)
	}
	dots := map[TrayState]color.RGBA{
		TrayAttention: {0xf5, 0x9e, 0x0b, 0xff},
		TrayError:     {0xdc, 0x26, 0x26, 0xff},
		TrayPaused:    {0x8a, 0x8f, 0x98, 0xff},
	}
	out := map[TrayState][]byte{}
	for _, st := range []TrayState{TrayRunning, TrayAttention, TrayError, TrayPaused} {
		b := img.Bounds()
		rgba := image.NewRGBA(b)
		draw.Draw(rgba, b, img, b.Min, draw.Src)
		if c, ok := dots[st]; ok {
			r := b.Dx() * 3 / 10
			cx, cy := b.Max.X-r-1, b.Max.Y-r-1
			for y := cy - r; y <= cy+r; y++ {
				for x := cx - r; x <= cx+r; x++ {
					dx, dy := x-cx, y-cy
					switch d := dx*dx + dy*dy; {
					case d <= (r-1)*(r-1):
						rgba.Set(x, y, c)
					case d <= r*r:
						rgba.Set(x, y, color.RGBA{0xff, 0xff, 0xff, 0xff})
					}
				}
			}
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, rgba); err != nil {
			return nil, fmt.Errorf("tray icon: %w", err)
		}
		out[st] = iconBytes(buf.Bytes(), b.Dx(), b.Dy())
	}
	return out, nil
}

// pngInICO wraps a PNG in a one-image ICO file (Windows Vista and later
// read PNG-compressed icons).
func pngInICO(p []byte, w, h int) []byte {
	var b bytes.Buffer
	dim := func(n int) byte {
		if n >= 256 {
			return 0
		}
		return byte(n)
	}
	le16 := func(v int) { b.WriteByte(byte(v)); b.WriteByte(byte(v >> 8)) }
	le32 := func(v int) { le16(v & 0xffff); le16(v >> 16) }
	le16(0)
	le16(1)
	le16(1)
	b.WriteByte(dim(w))
	b.WriteByte(dim(h))
	b.WriteByte(0)
	b.WriteByte(0)
	le16(1)
	le16(32)
	le32(len(p))
	le32(6 + 16)
	b.Write(p)
	return b.Bytes()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
