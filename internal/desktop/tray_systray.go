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

// StartTray shows the tray icon with its menu. Update changes what it shows.
func StartTray(icons map[TrayState][]byte, model TrayModel, act TrayActions) (*Tray, error) {
	if err := traySessionBus(); err != nil {
		return nil, err
	}
	t := &Tray{icons: icons, act: act, model: model, done: make(chan struct{})}
	// Before start, which reads it to publish ItemIsMenu: with a handler
	// set, a click on the icon opens the window rather than the menu. Set
	// in onReady, which runs on a goroutine of its own, it raced start.
	systray.SetOnTapped(func() { call(t.act.Open) })
	start, end := systray.RunWithExternalLoop(t.onReady, func() {})
	t.end = end
	start()
	return t, nil
}

func (t *Tray) onReady() {
	systray.SetTitle(DisplayName)
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

	t.mu.Lock()
	t.ready = true
	m := t.model
	t.mu.Unlock()
	t.apply(m, true)

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
		t.apply(m, false)
	}
}

func (t *Tray) apply(m TrayModel, first bool) {
	t.mu.Lock()
	last := t.last
	t.last = m
	t.attention = append([]TrayItem(nil), m.Attention...)
	t.mu.Unlock()
	if first || m.State != last.State {
		systray.SetIcon(t.icons[m.State])
	}
	if first || m.Tooltip != last.Tooltip {
		systray.SetTooltip(m.Tooltip)
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
