package shell

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wailsapp/wails/v2/pkg/menu"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/app/apptest"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/web"
)

// fakeRuntime records what the app asks of the window.
type fakeRuntime struct {
	mu     sync.Mutex
	events []relay.Change
	w, h   int
	x, y   int
	shown  int
	quit   int
	js     []string
	// answer is what Ask returns; infos are the Info messages shown.
	answer bool
	infos  []string
	// menu is the last application menu set.
	menu *menu.Menu
}

func (f *fakeRuntime) EventsEmit(name string, data ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == web.ChangeEvent && len(data) == 1 {
		f.events = append(f.events, data[0].(relay.Change))
	}
}
func (f *fakeRuntime) Show()            { f.mu.Lock(); f.shown++; f.mu.Unlock() }
func (f *fakeRuntime) Quit()            { f.mu.Lock(); f.quit++; f.mu.Unlock() }
func (f *fakeRuntime) SetTitle(string)  {}
func (f *fakeRuntime) Size() (int, int) { f.mu.Lock(); defer f.mu.Unlock(); return f.w, f.h }
func (f *fakeRuntime) Position() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.x, f.y
}
func (f *fakeRuntime) SetSize(w, h int)     { f.mu.Lock(); f.w, f.h = w, h; f.mu.Unlock() }
func (f *fakeRuntime) SetPosition(x, y int) { f.mu.Lock(); f.x, f.y = x, y; f.mu.Unlock() }
func (f *fakeRuntime) ExecJS(js string)     { f.mu.Lock(); f.js = append(f.js, js); f.mu.Unlock() }
func (f *fakeRuntime) PickFolder(title, start string) (string, error) {
	return filepath.Join(start, "picked"), nil
}
func (f *fakeRuntime) PickFile(title, start string) (string, error) { return "", nil }
func (f *fakeRuntime) Alert(title, message string)                  {}
func (f *fakeRuntime) Ask(title, message string) bool               { return f.answer }
func (f *fakeRuntime) Info(title, message string)                   { f.infos = append(f.infos, message) }
func (f *fakeRuntime) SetMenu(m *menu.Menu)                         { f.mu.Lock(); f.menu = m; f.mu.Unlock() }

func (f *fakeRuntime) eventTypes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		out = append(out, e.Type)
	}
	return out
}

// Ensure committed changes reach the window as relay:change events.
func TestForwardChanges(t *testing.T) {
	r := apptest.Relay(t)
	rt := &fakeRuntime{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go forward(ctx, r.Service(), rt)
	// The subscription starts asynchronously: keep making changes until one arrives.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if _, err := r.Services.Agents.Create(relay.CreateAgentInput{Slug: "agent-" + strconv.Itoa(i), DisplayName: "A", ModelSlug: "m", Capabilities: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if types := rt.eventTypes(); len(types) > 0 {
			if types[0] != relay.ChangeAgent {
				t.Fatalf("first event %q", types[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no change reached the window")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ensure the window geometry is remembered, restored, and bad files ignored.
func TestWindowState(t *testing.T) {
	dir := t.TempDir()
	if s := loadWindowState(dir); s.Width != defaultWidth || s.Placed {
		t.Fatalf("defaults %+v", s)
	}
	rt := &fakeRuntime{w: 1400, h: 900, x: 30, y: 40}
	w := &window{rt: rt, dataDir: dir}
	if err := w.remember(); err != nil {
		t.Fatal(err)
	}
	s := loadWindowState(dir)
	if s != (windowState{Width: 1400, Height: 900, X: 30, Y: 40, Placed: true}) {
		t.Fatalf("saved %+v", s)
	}
	rt2 := &fakeRuntime{}
	(&window{rt: rt2, dataDir: dir}).restore(s)
	if x, y := rt2.Position(); x != 30 || y != 40 {
		t.Fatalf("restored to %d,%d", x, y)
	}
	if err := os.WriteFile(filepath.Join(dir, windowFile), []byte(`{"width":10,"height":10}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := loadWindowState(dir); s.Width != defaultWidth {
		t.Fatalf("tiny size accepted: %+v", s)
	}
}

// Ensure Show works only where a window exists: the services' System
// shows the window the shell attached, and refuses before.
func TestSystemShow(t *testing.T) {
	s := apptest.Relay(t).Services
	if err := s.System.Show(); relay.ErrorCode(err) != relay.EInvalidRequest {
		t.Fatalf("show without window: %v", err)
	}
	rt := &fakeRuntime{}
	s.AttachWindow(rt, rt.Show, rt.Quit)
	if err := s.System.Show(); err != nil || rt.shown != 1 {
		t.Fatalf("show: %v, shown %d", err, rt.shown)
	}
}

// Ensure the folder and program pickers work only in the window and return
// its choice (the fake runtime picks a folder and cancels a program).
func TestSystemPickers(t *testing.T) {
	for _, tc := range []struct {
		name, dir, want string
		pick            func(s *app.System, title, dir string) (string, error)
	}{
		{"folder", "/tmp", "/tmp/picked", (*app.System).PickFolder},
		{"program", "/usr/bin", "", (*app.System).PickProgram},
	} {
		t.Run(tc.name, func(t *testing.T) {
			services := apptest.Relay(t).Services
			s := services.System
			if _, err := tc.pick(s, "Pick", tc.dir); relay.ErrorCode(err) != relay.EInvalidRequest {
				t.Fatalf("without window: %v", err)
			}
			rt := &fakeRuntime{}
			services.AttachWindow(rt, rt.Show, rt.Quit)
			if got, err := tc.pick(s, "Pick", tc.dir); err != nil || got != tc.want {
				t.Fatalf("picked %q %v; want %q", got, err, tc.want)
			}
		})
	}
}
