//go:build linux

package desktop

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crosschat/crosschat-relay/internal/poll"
)

// exportingTray stands in for systray's start on Linux, in the one order
// of its steps that loses a property: start lets onReady run (on a
// goroutine) as it begins, reads the properties for its export, and sets
// them on the bus only once the export is done; a property set in between
// is kept in memory, never published. Here onReady runs to its end inside
// that window, every time. (Against the real library the same happens in
// a few starts in a hundred; .ci/tray.sh saw its tooltip stay empty.)
type exportingTray struct {
	mu               sync.Mutex
	tooltip, title   string // what the library holds
	exported         bool
	busTip, busTitle string // what the bus shows
}

func (f *exportingTray) setTooltip(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tooltip = s
	if f.exported {
		f.busTip = s
	}
}

func (f *exportingTray) setTitle(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.title = s
	if f.exported {
		f.busTitle = s
	}
}

func (f *exportingTray) run(onReady, _ func()) (start, end func()) {
	ready, readyDone := make(chan struct{}), make(chan struct{})
	go func() {
		<-ready
		onReady()
		close(readyDone)
	}()
	return func() {
		f.mu.Lock()
		tip, title := f.tooltip, f.title // read for the export
		f.mu.Unlock()
		close(ready)
		<-readyDone
		f.mu.Lock()
		f.busTip, f.busTitle, f.exported = tip, title, true
		f.mu.Unlock()
	}, func() {}
}

func (f *exportingTray) onBus() (tip, title string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busTip, f.busTitle
}

// useExportingTray puts f in systray's place for the test.
func useExportingTray(t *testing.T, f *exportingTray) {
	saved := []any{sessionBus, runTray, setIcon, setTooltip, setTitle}
	sessionBus = func() error { return nil }
	runTray, setTooltip, setTitle = f.run, f.setTooltip, f.setTitle
	setIcon = func([]byte) {}
	t.Cleanup(func() {
		sessionBus, runTray = saved[0].(func() error), saved[1].(func(func(), func()) (func(), func()))
		setIcon, setTooltip, setTitle = saved[2].(func([]byte)), saved[3].(func(string)), saved[4].(func(string))
	})
}

// The tray's first model reaches the bus although the library exports its
// properties while onReady runs: StartTray shows it after start, not from
// onReady (.ci/tray.sh waited in vain for the tooltip's counts). Then a
// burst of updates racing each other ends with the last one shown.
func TestTrayShowsItsModelOnceExported(t *testing.T) {
	f := &exportingTray{}
	useExportingTray(t, f)
	model := TrayModel{Tooltip: "Crosschat Relay: 0 queued, 0 claimed, 0 need attention"}
	tray, err := StartTray(map[TrayState][]byte{}, model, TrayActions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tray.Stop()
	var tip, title string
	poll.Until(t, "the first model on the bus", 5*time.Second, func() bool {
		tip, title = f.onBus()
		return tip == model.Tooltip && title == DisplayName
	})

	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tray.Update(TrayModel{Tooltip: fmt.Sprintf("burst %d", i)})
		}()
	}
	wg.Wait()
	last := TrayModel{Tooltip: "Crosschat Relay: 1 queued, 0 claimed, 1 need attention", State: TrayAttention}
	tray.Update(last)
	if tip, _ = f.onBus(); tip != last.Tooltip {
		t.Fatalf("after the burst the bus shows %q, want the last update's %q", tip, last.Tooltip)
	}
}
