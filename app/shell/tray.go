package shell

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wailsapp/wails/v2/pkg/menu"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
)

// Presence timings: tray refreshes are at most this frequent, and a burst
// of notifications is shown together once this long passes without a new one.
const (
	trayRefresh = 500 * time.Millisecond
	noteQuiet   = 1500 * time.Millisecond
)

// trayView is the part of desktop.Tray presence drives.
type trayView interface {
	Update(desktop.TrayModel)
	Stop()
}

// presence is the app's sign of life while its window is hidden: the tray
// icon (state, tooltip counts, the tasks needing attention) and the OS
// notifications, both fed by the relay's committed changes.
type presence struct {
	svc      relay.Service
	services *app.Services
	dataDir  string
	log      *slog.Logger
	focus    *app.Focus
	notifier desktop.Notifier
	tray     trayView

	mu      sync.Mutex
	prefs   desktopPrefs
	workers map[string]relay.WorkerState
}

// presenceHooks are what the tray's items do in the window app.
type presenceHooks struct {
	show     func()
	openTask func(id string)
	quit     func()
	// setMenu replaces the application menu; where the desktop has no tray
	// (macOS) the menu carries the tray's items instead. Nil: no fallback.
	setMenu func(*menu.Menu)
}

// startPresence starts the tray and the notifier; either may be missing
// (no tray host, no notification service) and the app runs on without it.
func startPresence(ctx context.Context, svc relay.Service, services *app.Services, dataDir string, icon []byte, log *slog.Logger, hooks presenceHooks) *presence {
	p := &presence{svc: svc, services: services, dataDir: dataDir, log: log,
		prefs: loadPrefs(dataDir), workers: map[string]relay.WorkerState{}}
	p.focus = services.TrackFocus()
	if n, err := desktop.NewNotifier(hooks.openTask); err != nil {
		log.Warn("no OS notifications", "err", err)
	} else {
		p.notifier = n
	}
	actions := desktop.TrayActions{
		Open:             hooks.show,
		OpenTask:         hooks.openTask,
		Quit:             hooks.quit,
		SetPaused:        p.setPaused,
		SetStartAtLogin:  p.setStartAtLogin,
		SetNotifications: p.setNotifications,
		OpenDataFolder: func() {
			if err := services.System.RevealDataFolder(); err != nil {
				log.Warn("open data folder", "err", err)
			}
		},
	}
	if icons, err := desktop.StateIcons(icon); err != nil {
		log.Warn("no tray icon", "err", err)
	} else if t, err := desktop.StartTray(icons, p.model(ctx), actions); errors.Is(err, desktop.ErrNoTray) && hooks.setMenu != nil {
		log.Info("no tray on this desktop: its items are in the application menu")
		p.tray = menuTray{set: hooks.setMenu, show: hooks.show, quit: hooks.quit, act: actions}
		p.tray.Update(p.model(ctx))
	} else if err != nil {
		log.Warn("no tray icon", "err", err)
	} else {
		p.tray = t
	}
	go p.loop(ctx)
	return p
}

func (p *presence) stop() {
	if p.tray != nil {
		p.tray.Stop()
	}
	if p.notifier != nil {
		if err := p.notifier.Close(); err != nil {
			p.log.Warn("close notifier", "err", err)
		}
	}
}

func (p *presence) setPaused(paused bool) {
	s, err := p.services.Settings.Get()
	if err == nil {
		s.WorkersPaused = paused
		_, err = p.services.Settings.Update(s)
	}
	if err != nil {
		p.log.Warn("pause workers from the tray", "err", err)
	}
}

func (p *presence) setStartAtLogin(on bool) {
	if _, err := p.services.System.SetStartAtLogin(on); err != nil {
		p.log.Warn("start at login from the tray", "err", err)
	}
	p.refresh(context.Background())
}

func (p *presence) setNotifications(on bool) {
	p.mu.Lock()
	p.prefs.Notifications = on
	prefs := p.prefs
	p.mu.Unlock()
	if err := prefs.save(p.dataDir); err != nil {
		p.log.Warn("notifications setting", "err", err)
	}
	p.refresh(context.Background())
}

// model computes what the tray shows from the relay.
func (p *presence) model(ctx context.Context) desktop.TrayModel {
	p.mu.Lock()
	m := desktop.TrayModel{Notifications: p.prefs.Notifications}
	workerErr := false
	for _, st := range p.workers {
		workerErr = workerErr || st == relay.WorkerError
	}
	p.mu.Unlock()
	if on, err := p.services.System.StartsAtLogin(); err == nil {
		m.StartAtLogin = on
	}
	op := p.svc.OperatorSlug()
	tasks, err := p.svc.ListTasks(ctx, relay.TaskFilter{Agent: op, Statuses: []relay.TaskStatus{relay.StatusBlocked, relay.StatusQueued}, Limit: 100})
	if err != nil {
		workerErr = true
	}
	for _, t := range tasks {
		if needsAttention(t, op) {
			m.Attention = append(m.Attention, desktop.TrayItem{TaskID: t.ID, Title: t.Title})
		}
	}
	stats, serr := p.svc.Stats(ctx)
	settings, _ := p.svc.Settings(ctx)
	m.Paused = settings.WorkersPaused
	switch {
	case !p.svc.Healthy() || serr != nil || workerErr:
		m.State = desktop.TrayError
	case len(m.Attention) > 0:
		m.State = desktop.TrayAttention
	case m.Paused:
		m.State = desktop.TrayPaused
	default:
		m.State = desktop.TrayRunning
	}
	m.Tooltip = fmt.Sprintf("Crosschat Relay: %d queued, %d claimed, %d need attention", stats.Tasks.Queued, stats.Tasks.Claimed, len(m.Attention))
	if m.Paused {
		m.Tooltip += "; workers paused"
	}
	if m.State == desktop.TrayError {
		m.Tooltip += "; an error needs a look"
	}
	if len(m.Attention) > desktop.MaxTrayAttention {
		m.Attention = m.Attention[:desktop.MaxTrayAttention]
	}
	return m
}

// needsAttention: a task the operator sent that is blocked, or one sent
// to the operator that waits in the queue.
func needsAttention(t relay.TaskSummary, op string) bool {
	return (t.SenderSlug == op && t.Status == relay.StatusBlocked) || (t.RecipientSlug == op && t.Status == relay.StatusQueued)
}

func (p *presence) refresh(ctx context.Context) {
	if p.tray != nil {
		p.tray.Update(p.model(ctx))
	}
}

// loop follows the relay's changes: it refreshes the tray (at most every
// trayRefresh) and shows notifications for bursts once they go quiet.
func (p *presence) loop(ctx context.Context) {
	det := newNoteDetector(p.svc.OperatorSlug())
	if ts, err := p.svc.ListTasks(ctx, relay.TaskFilter{Agent: p.svc.OperatorSlug(), Limit: 500}); err == nil {
		for _, t := range ts {
			det.seed(t)
		}
	}
	changes, cancel := p.svc.Subscribe(1024)
	defer func() { cancel() }()
	refresh := time.NewTimer(0)
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	var pending []note
	dirty := true
	for {
		select {
		case <-ctx.Done():
			return
		case c, ok := <-changes:
			if !ok { // fell behind: subscribe again
				changes, cancel = p.svc.Subscribe(1024)
				dirty = true
				refresh.Reset(trayRefresh)
				continue
			}
			if c.Type == "worker" && c.Worker != nil {
				p.mu.Lock()
				p.workers[c.Worker.AgentSlug] = c.Worker.State
				p.mu.Unlock()
			}
			if ns := det.detect(c); len(ns) > 0 {
				pending = append(pending, ns...)
				quiet.Reset(noteQuiet)
			}
			if !dirty {
				dirty = true
				refresh.Reset(trayRefresh)
			}
		case <-refresh.C:
			if dirty {
				dirty = false
				p.refresh(ctx)
			}
		case <-quiet.C:
			p.notify(pending)
			pending = nil
		}
	}
}

func (p *presence) notify(notes []note) {
	p.mu.Lock()
	on := p.prefs.Notifications
	p.mu.Unlock()
	if !on || p.notifier == nil || p.focus.Focused() {
		return
	}
	for _, n := range coalesce(notes) {
		if err := p.notifier.Notify(n); err != nil {
			p.log.Warn("notification not shown", "err", err)
		}
	}
}
