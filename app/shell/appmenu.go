package shell

import (
	"fmt"

	"github.com/wailsapp/wails/v2/pkg/menu"
	"github.com/wailsapp/wails/v2/pkg/menu/keys"

	"github.com/crosschat/crosschat-relay/internal/desktop"
)

// appMenu is the window's application menu: Show dashboard and Quit. Given a
// tray model it also carries the tray's items (the tasks that need attention,
// Pause/Resume workers, Start at login, Notifications, Open data folder), for
// desktops without a tray: on macOS the tray library's Cocoa delegate clashes
// with Wails' own, so the app menu stands in for it.
func appMenu(show, quit func(), m *desktop.TrayModel, act desktop.TrayActions) *menu.Menu {
	root := menu.NewMenu()
	sub := root.AddSubmenu(desktop.DisplayName)
	sub.AddText("Show dashboard", keys.CmdOrCtrl("d"), func(*menu.CallbackData) { show() })
	if m != nil {
		sub.AddSeparator()
		if len(m.Attention) == 0 {
			sub.AddText("Nothing needs attention", nil, nil).Disable()
		} else {
			sub.AddText(attentionHeader(len(m.Attention)), nil, nil).Disable()
			for _, it := range m.Attention {
				id := it.TaskID
				sub.AddText("  "+it.Title, nil, func(*menu.CallbackData) { go act.OpenTask(id) })
			}
		}
		sub.AddSeparator()
		pause := desktop.TrayPauseTitle
		if m.Paused {
			pause = desktop.TrayResumeTitle
		}
		paused := m.Paused
		sub.AddText(pause, nil, func(*menu.CallbackData) { go act.SetPaused(!paused) })
		login := m.StartAtLogin
		sub.AddCheckbox(desktop.TrayStartAtLoginTitle, login, nil, func(*menu.CallbackData) { go act.SetStartAtLogin(!login) })
		notes := m.Notifications
		sub.AddCheckbox(desktop.TrayNotificationsTitle, notes, nil, func(*menu.CallbackData) { go act.SetNotifications(!notes) })
		sub.AddText(desktop.TrayDataFolderTitle, nil, func(*menu.CallbackData) { go act.OpenDataFolder() })
	}
	sub.AddSeparator()
	sub.AddText(desktop.TrayQuitTitle, keys.CmdOrCtrl("q"), func(*menu.CallbackData) { quit() })
	return root
}

// attentionHeader is the line above the attention tasks, as the tray says it.
func attentionHeader(n int) string {
	if n == 1 {
		return "1 task needs attention"
	}
	return fmt.Sprintf("%d tasks need attention", n)
}

// menuTray shows the tray model in the application menu (trayView), where
// the desktop has no tray.
type menuTray struct {
	set        func(*menu.Menu)
	show, quit func()
	act        desktop.TrayActions
}

// Update rebuilds the application menu from the model.
func (t menuTray) Update(m desktop.TrayModel) { t.set(appMenu(t.show, t.quit, &m, t.act)) }

// Stop does nothing: the menu goes with the window.
func (menuTray) Stop() {}
