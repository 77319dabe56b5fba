package shell

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/wailsapp/wails/v2/pkg/menu"

	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/poll"
)

// menuItems flattens the app's submenu into "label" rows, with [x]/[ ] for
// checkboxes and (off) for disabled items.
func menuItems(t *testing.T, m *menu.Menu) ([]string, []*menu.MenuItem) {
	t.Helper()
	if m == nil || len(m.Items) != 1 || m.Items[0].SubMenu == nil {
		t.Fatalf("app menu is not one submenu: %#v", m)
	}
	var rows []string
	var items []*menu.MenuItem
	for _, it := range m.Items[0].SubMenu.Items {
		row := it.Label
		switch {
		case it.IsSeparator():
			row = "---"
		case it.IsCheckbox() && it.Checked:
			row = "[x] " + row
		case it.IsCheckbox():
			row = "[ ] " + row
		}
		if it.Disabled {
			row += " (off)"
		}
		rows = append(rows, row)
		items = append(items, it)
	}
	return rows, items
}

func TestAppMenu(t *testing.T) {
	noop := func() {}
	cases := []struct {
		name  string
		model *desktop.TrayModel
		want  []string
	}{
		{"window only", nil, []string{"Show dashboard", "---", "Quit"}},
		{"nothing needs attention", &desktop.TrayModel{Notifications: true}, []string{
			"Show dashboard", "---", "Nothing needs attention (off)", "---",
			"Pause workers", "[ ] Start at login", "[x] Notifications", "Open data folder", "---", "Quit"}},
		{"attention, paused", &desktop.TrayModel{Paused: true, StartAtLogin: true,
			Attention: []desktop.TrayItem{{TaskID: "t1", Title: "Fix the build"}, {TaskID: "t2", Title: "Review"}}}, []string{
			"Show dashboard", "---", "2 tasks need attention (off)", "  Fix the build", "  Review", "---",
			"Resume workers", "[x] Start at login", "[ ] Notifications", "Open data folder", "---", "Quit"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, _ := menuItems(t, appMenu(noop, noop, c.model, desktop.TrayActions{}))
			if !reflect.DeepEqual(rows, c.want) {
				t.Fatalf("menu\n got %q\nwant %q", rows, c.want)
			}
		})
	}
}

// TestMenuTrayActs: where there is no tray, the application menu does what
// the tray's items do, and each model update replaces the menu.
func TestMenuTrayActs(t *testing.T) {
	var mu sync.Mutex
	var got []string
	record := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	rt := &fakeRuntime{}
	tray := menuTray{set: rt.SetMenu, show: func() { record("show") }, quit: func() { record("quit") }, act: desktop.TrayActions{
		OpenTask:         func(id string) { record("open " + id) },
		SetPaused:        func(p bool) { record("paused " + map[bool]string{true: "on", false: "off"}[p]) },
		SetStartAtLogin:  func(on bool) { record("login " + map[bool]string{true: "on", false: "off"}[on]) },
		SetNotifications: func(on bool) { record("notes " + map[bool]string{true: "on", false: "off"}[on]) },
		OpenDataFolder:   func() { record("folder") },
	}}
	tray.Update(desktop.TrayModel{Paused: true, Notifications: true, Attention: []desktop.TrayItem{{TaskID: "t9", Title: "Blocked"}}})
	rt.mu.Lock()
	m := rt.menu
	rt.mu.Unlock()
	_, items := menuItems(t, m)
	for _, it := range items {
		if it.Click != nil && !it.Disabled {
			it.Click(&menu.CallbackData{MenuItem: it})
		}
	}
	want := []string{"show", "open t9", "paused off", "login on", "notes off", "folder", "quit"}
	poll.Until(t, "every menu action to run", 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == len(want) })
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	for _, w := range want {
		if !seen[w] {
			t.Fatalf("actions %q lack %q", got, w)
		}
	}
	tray.Update(desktop.TrayModel{})
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.menu == m {
		t.Fatal("an update did not replace the menu")
	}
}
