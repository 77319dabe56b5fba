//go:build linux || windows

package desktop

import (
	"runtime"
	"sync"

	"fyne.io/systray"
)

func iconBytes(p []byte, w, h int) []byte {
	if runtime.GOOS == "windows" {
		return pngInICO(p, w, h)
	}
	return p
}

// Tray is the status icon (StatusNotifierItem over D-Bus on Linux, the
// notification area on Windows), run beside the window toolkit's own loop
// (systray's external-loop mode), so it never fights Wails' GTK loop.
type Tray struct {
	icons map[TrayState][]byte
	act   TrayActions
	end   func()

	built   chan struct{} // closed when onReady has built the menu
	applyMu sync.Mutex    // one apply at a time

	mu        sync.Mutex
	model     TrayModel
	last      TrayModel
	ready     bool
	attention []TrayItem

	open, pause, login, notify, folder, quit *systray.MenuItem
	header                                   *systray.MenuItem
	slots                                    [MaxTrayAttention]*systray.MenuItem
	stopOnce                                 sync.Once
	done                                     chan struct{}
}

// The parts of systray whose order StartTray keeps; a test replaces them
// (TestTrayShowsItsModelOnceExported).
var (
	sessionBus = traySessionBus
	runTray    = systray.RunWithExternalLoop
	setIcon    = systray.SetIcon
	setTooltip = systray.SetTooltip
	setTitle   = systray.SetTitle
)

// StartTray shows the tray icon with its menu. Update changes what it shows.
func StartTray(icons map[TrayState][]byte, model TrayModel, act TrayActions) (*Tray, error) {
	if err := sessionBus(); err != nil {
		return nil, err
	}
	t := &Tray{icons: icons, act: act, model: model, built: make(chan struct{}), done: make(chan struct{})}
	// Before start, which reads it to publish ItemIsMenu: with a handler
	// set, a click on the icon opens the window rather than the menu. Set
	// in onReady, which runs on a goroutine of its own, it raced start.
	systray.SetOnTapped(func() { call(t.act.Open) })
	start, end := runTray(t.onReady, func() {})
	t.end = end
	// start exports the icon's properties on the bus, and the library runs
	// onReady (the menu) on a goroutine of its own as start begins. A
	// property set while start runs is lost: the library reads them once
	// for the export and sets them on the bus only after it, so a change
	// made in between stays in memory and never reaches the bus (the
	// tooltip without its counts, for good, since only changes are sent).
	// So the model is shown once both are done, not from onReady.
	start()
	go t.showOnceBuilt()
	return t, nil
}

// showOnceBuilt shows the model once onReady has built the menu (which
// never happens where the library failed to start: Windows without its
// window). StartTray runs it after start returned.
func (t *Tray) showOnceBuilt() {
	select {
	case <-t.built:
	case <-t.done:
		return
	}
	t.mu.Lock()
	t.ready = true
	t.mu.Unlock()
	t.apply(true)
}

// onReady builds the menu, empty until the first apply fills it.
func (t *Tray) onReady() {
	defer close(t.built)
	setTitle(DisplayName) // before the export it names the item's Id too
	t.open = systray.AddMenuItem(TrayOpenTitle, "Show the Crosschat Relay window")
	systray.AddSeparator()
	t.header = systray.AddMenuItem("Needs attention", "")
	t.header.Disable()
	for i := range t.slots {
		t.slots[i] = systray.AddMenuItem("", "Open this task")
		t.slots[i].Hide()
	}
	systray.AddSeparator()
	t.pause = systray.AddMenuItem(TrayPauseTitle, "Pause or resume every worker")
	t.login = systray.AddMenuItemCheckbox(TrayStartAtLoginTitle, "Start Crosschat Relay, hidden, when you log in", false)
	t.notify = systray.AddMenuItemCheckbox(TrayNotificationsTitle, "Show a notification when a task you sent finishes or blocks", false)
	t.folder = systray.AddMenuItem(TrayDataFolderTitle, "Show the data folder in the file manager")
	systray.AddSeparator()
	t.quit = systray.AddMenuItem(TrayQuitTitle, "Stop the relay and quit")

	go t.clicks(t.open, func() { call(t.act.Open) })
	go t.clicks(t.pause, func() {
		t.mu.Lock()
		p := !t.last.Paused
		t.mu.Unlock()
		if t.act.SetPaused != nil {
			t.act.SetPaused(p)
		}
	})
	go t.clicks(t.login, func() {
		if t.act.SetStartAtLogin != nil {
			t.act.SetStartAtLogin(!t.login.Checked())
		}
	})
	go t.clicks(t.notify, func() {
		if t.act.SetNotifications != nil {
			t.act.SetNotifications(!t.notify.Checked())
		}
	})
	go t.clicks(t.folder, func() { call(t.act.OpenDataFolder) })
	go t.clicks(t.quit, func() { call(t.act.Quit) })
	for i, s := range t.slots {
		go t.clicks(s, func() {
			t.mu.Lock()
			var id string
			if i < len(t.attention) {
				id = t.attention[i].TaskID
			}
			t.mu.Unlock()
			if id != "" && t.act.OpenTask != nil {
				t.act.OpenTask(id)
			}
		})
	}
}

func call(f func()) {
	if f != nil {
		f()
	}
}

func (t *Tray) clicks(item *systray.MenuItem, f func()) {
	for {
		select {
		case <-t.done:
			return
		case <-item.ClickedCh:
			f()
		}
	}
}

// Update shows m (only what changed is sent).
func (t *Tray) Update(m TrayModel) {
	t.mu.Lock()
	t.model = m
	ready := t.ready
	t.mu.Unlock()
	if ready {
		t.apply(false)
	}
}

// apply shows the latest model, all of it when first. One apply runs at a
// time and each takes the model as it is then, so the last one shows the
// last Update: two at once could otherwise leave an older model showing,
// recorded as shown the newer.
func (t *Tray) apply(first bool) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.Lock()
	m := t.model
	last := t.last
	t.last = m
	t.attention = append([]TrayItem(nil), m.Attention...)
	t.mu.Unlock()
	if first {
		setTitle(DisplayName)
	}
	if first || m.State != last.State {
		setIcon(t.icons[m.State])
	}
	if first || m.Tooltip != last.Tooltip {
		setTooltip(m.Tooltip)
	}
	if first || m.Paused != last.Paused {
		if m.Paused {
			t.pause.SetTitle(TrayResumeTitle)
		} else {
			t.pause.SetTitle(TrayPauseTitle)
		}
	}
	setChecked(t.login, m.StartAtLogin)
	setChecked(t.notify, m.Notifications)
	if len(m.Attention) == 0 {
		t.header.SetTitle("Nothing needs attention")
	} else {
		t.header.SetTitle(plural(len(m.Attention), "task needs", "tasks need") + " attention")
	}
	for i, s := range t.slots {
		if i < len(m.Attention) {
			title := m.Attention[i].Title
			if r := []rune(title); len(r) > 60 {
				title = string(r[:59]) + "…"
			}
			s.SetTitle(title)
			s.Show()
		} else {
			s.Hide()
		}
	}
}

func setChecked(item *systray.MenuItem, on bool) {
	if on && !item.Checked() {
		item.Check()
	} else if !on && item.Checked() {
		item.Uncheck()
	}
}

// Stop removes the icon.
func (t *Tray) Stop() {
	t.stopOnce.Do(func() {
		close(t.done)
		t.end()
	})
}
