package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// Default and minimum window sizes.
const (
	defaultWidth  = 1280
	defaultHeight = 820
	minWidth      = 1024
	minHeight     = 700
)

// windowState is the window geometry remembered between runs.
type windowState struct {
	Width  int  `json:"width"`
	Height int  `json:"height"`
	X      int  `json:"x"`
	Y      int  `json:"y"`
	Placed bool `json:"placed"`
}

const windowFile = "window.json"

// loadWindowState reads the remembered geometry; anything missing or
// unreadable gives the defaults.
func loadWindowState(dataDir string) windowState {
	def := windowState{Width: defaultWidth, Height: defaultHeight}
	b, err := os.ReadFile(filepath.Join(dataDir, windowFile))
	if err != nil {
		return def
	}
	var s windowState
	if json.Unmarshal(b, &s) != nil || s.Width < minWidth || s.Height < minHeight || s.Width > 10000 || s.Height > 10000 {
		return def
	}
	return s
}

// save writes the geometry atomically.
func (s windowState) save(dataDir string) error {
	return app.WriteJSONAtomic(filepath.Join(dataDir, windowFile), s, "save window state")
}

// window ties the native window to the relay: it forwards committed
// changes as events, remembers the geometry, and runs the self-test.
type window struct {
	rt      app.Runtime
	dataDir string
	last    windowState
}

// current reads the geometry from the window.
func (w *window) current() windowState {
	width, height := w.rt.Size()
	x, y := w.rt.Position()
	return windowState{Width: width, Height: height, X: x, Y: y, Placed: true}
}

// remember saves the geometry when it changed since the last save.
func (w *window) remember() error {
	s := w.current()
	if s == w.last || s.Width < minWidth/2 || s.Height < minHeight/2 {
		return nil
	}
	if err := s.save(w.dataDir); err != nil {
		return err
	}
	w.last = s
	return nil
}

// restore places the window where it was.
func (w *window) restore(s windowState) {
	w.last = s
	if s.Placed {
		w.rt.SetPosition(s.X, s.Y)
	}
}

// forward emits every committed change to the window until ctx ends. When
// the subscription is dropped (the window fell behind) it tells the window
// to reload and subscribes again.
func forward(ctx context.Context, svc relay.Service, rt app.Runtime) {
	for ctx.Err() == nil {
		ch, cancel := svc.Subscribe(1024)
		func() {
			defer cancel()
			for {
				select {
				case <-ctx.Done():
					return
				case c, ok := <-ch:
					if !ok {
						rt.EventsEmit(web.ChangeEvent, relay.Change{Type: "resync"})
						return
					}
					rt.EventsEmit(web.ChangeEvent, c)
				}
			}
		}()
	}
}
