package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
	"github.com/wailsapp/wails/v2/pkg/options/linux"

	"github.com/crosschat/crosschat-relay/app"
	"github.com/crosschat/crosschat-relay/internal/client"
	"github.com/crosschat/crosschat-relay/internal/config"
	"github.com/crosschat/crosschat-relay/internal/desktop"
	"github.com/crosschat/crosschat-relay/internal/relay"
	"github.com/crosschat/crosschat-relay/internal/store"
	"github.com/crosschat/crosschat-relay/internal/tick"
)

// DesktopOptions are the parts of the window app that come from the binary.
type DesktopOptions struct {
	Version string
	Assets  fs.FS
	// Icon is the PNG window icon (Linux).
	Icon []byte
	// TrayIcon is the small PNG the tray icon is drawn from; nil uses Icon.
	TrayIcon []byte
}

// noWindowText is what a build without a window says when run as the app.
const noWindowText = `crosschat-relay: this build has no window (it was built without Wails' build tags,
as make run, make install and the headless package build it). Start the relay with

  crosschat-relay serve

and open the dashboard it prints (http://localhost:4318/ by default) in a browser.
crosschat-relay --help lists every verb.
`

// Desktop runs the desktop app: a native window hosting the dashboard, with
// the relay running in the same process. Closing the window hides it and
// the relay keeps serving; Quit (menu, Ctrl+Q, `crosschat-relay quit`)
// stops it. Nothing is opened before wails.Run (binding generation runs the
// binary); the relay starts in OnStartup.
func Desktop(args []string, opts DesktopOptions, stderr io.Writer) int {
	if !WindowBuild {
		// A mistyped flag is said as such, not as the missing window.
		if err := app.CheckArgs("crosschat-relay", args); err != nil {
			fmt.Fprintf(stderr, "crosschat-relay: %v\ncrosschat-relay --help lists every verb.\n", err)
			return 2
		}
		fmt.Fprint(stderr, noWindowText)
		return 2
	}
	// crosschat-relay://task/<id>: Windows starts the app with the URL of a
	// clicked toast; the window opens on that task.
	startTask, _, args := desktop.URLArg(args)
	cfg, log, closer, code := app.Prepare("desktop", args, os.Stdout, stderr)
	if closer == nil {
		return code
	}
	defer closer.Close()

	d := &desktopApp{cfg: cfg, opts: opts, log: log, services: app.NewServices(opts.Version), startTask: startTask}
	d.services.SetLaunchArgs(args, cfg.DataDir)
	geom := loadWindowState(cfg.DataDir)

	err := wails.Run(&options.App{
		Title:             "Crosschat Relay",
		Width:             geom.Width,
		Height:            geom.Height,
		MinWidth:          minWidth,
		MinHeight:         minHeight,
		StartHidden:       cfg.Hidden,
		HideWindowOnClose: true,
		Menu:              appMenu(d.show, d.quit, nil, desktop.TrayActions{}),
		AssetServer:       &assetserver.Options{Assets: opts.Assets},
		SingleInstanceLock: &options.SingleInstanceLock{
			UniqueId:               "dev.crosschat.relay",
			OnSecondInstanceLaunch: func(second options.SecondInstanceData) { d.secondInstance(second.Args) },
		},
		ErrorFormatter: func(err error) any { return relay.AsError(err) },
		OnStartup:      func(ctx context.Context) { d.startup(ctx, geom) },
		OnDomReady:     d.domReady,
		OnBeforeClose:  func(ctx context.Context) bool { d.beforeQuit(); return false },
		OnShutdown:     func(ctx context.Context) { d.shutdown() },
		Bind:           append(d.services.List(), app.SelfTestBind()...),
		Linux:          linuxOptions(opts.Icon),
	})
	if err != nil {
		fmt.Fprintln(stderr, "crosschat-relay:", err)
		return 1
	}
	return d.exitCode
}

// linuxOptions are the window's options on Linux. The webview draws
// without hardware acceleration, as Wails has it when given no Linux
// options: WebviewGpuPolicy's zero value is Always, under which WebKitGTK
// (2.50, under Xvfb) left chart canvases of the Activity page blank in
// about half of the starts, drawn but not composited into the window
// (.ci/gui.sh checks the screen at the charts' places).
func linuxOptions(icon []byte) *linux.Options {
	return &linux.Options{Icon: icon, ProgramName: "crosschat-relay", WebviewGpuPolicy: linux.WebviewGpuPolicyNever}
}

// desktopApp is the window app's state; its methods run on Wails' callbacks.
type desktopApp struct {
	cfg      config.Config
	opts     DesktopOptions
	log      *slog.Logger
	services *app.Services
	rt       app.Runtime
	win      *window
	relay    *app.Relay
	cancel   context.CancelFunc
	exitCode int
	// startErr is why the relay did not start; shown once the window is up.
	startErr error
	presence *presence
	geom     windowState
	// startTask is the task the window opens on (from a URL argument).
	startTask string
}

// secondInstance handles a second launch: the window comes forward, on the
// task its URL argument names (a clicked Windows toast).
func (d *desktopApp) secondInstance(args []string) {
	if id, _, _ := desktop.URLArg(args); id != "" {
		d.openTask(id)
		return
	}
	d.show()
}

// openTask shows the window on one task (a tray item or a notification).
func (d *desktopApp) openTask(id string) {
	if d.rt == nil {
		return
	}
	d.rt.Show()
	hash, _ := json.Marshal("#/tasks?task=" + id)
	d.rt.ExecJS("location.hash = " + string(hash))
}

// domReady tells the person why the relay could not start, then quits.
func (d *desktopApp) domReady(ctx context.Context) {
	if d.startErr == nil {
		d.rt.ExecJS(focusJS)
		if d.startTask != "" {
			d.openTask(d.startTask)
			d.startTask = ""
		}
		return
	}
	d.rt.Show()
	if store.IsUpstream(d.startErr) {
		// The data folder holds the upstream relay's database: offer to
		// import it, then start on the result.
		imported, err := offerImport(d.rt, d.cfg.DatabasePath(), d.cfg.OperatorSlug, d.startErr)
		if imported {
			if err = d.startRelay(); err == nil {
				d.startErr, d.exitCode = nil, 0
				d.rt.ExecJS("location.reload()")
				return
			}
		}
		d.startErr = err
	}
	d.rt.Alert("Crosschat Relay could not start", d.startErr.Error())
	d.rt.Quit()
}

func (d *desktopApp) show() {
	if d.rt != nil {
		d.rt.Show()
	}
}

func (d *desktopApp) quit() {
	if d.rt != nil {
		d.rt.Quit()
	}
}

func (d *desktopApp) startup(ctx context.Context, geom windowState) {
	d.rt = wailsRuntime{ctx}
	d.geom = geom
	if err := d.startRelay(); err != nil {
		if errors.Is(err, app.ErrPortTaken) && d.showRunning() {
			// Nothing of ours is open yet, and GTK cannot quit before its
			// main loop runs: leave at once.
			d.log.Info("another Crosschat Relay is already running; showed its window")
			os.Exit(0)
		}
		d.log.Error("relay failed to start", "err", err)
		d.exitCode = 1
		d.startErr = err
	}
}

// startRelay starts the relay and everything that hangs off it.
func (d *desktopApp) startRelay() error {
	geom := d.geom
	r, err := app.Start(d.cfg, app.StartOptions{Version: d.opts.Version, Assets: d.opts.Assets, Logger: d.log, Services: d.services, Mode: "app"})
	if err != nil {
		return err
	}
	d.relay = r
	bg, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.services.AttachWindow(d.rt, d.show, d.quit)
	d.win = &window{rt: d.rt, dataDir: d.cfg.DataDir}
	d.win.restore(geom)
	go forward(bg, r.Service(), d.rt)
	icon := d.opts.TrayIcon
	if icon == nil {
		icon = d.opts.Icon
	}
	d.presence = startPresence(bg, r.Service(), d.services, d.cfg.DataDir, icon, d.log, presenceHooks{show: d.show, openTask: d.openTask, quit: d.quit, setMenu: d.rt.SetMenu})
	go d.rememberLoop(bg)
	if os.Getenv(app.SelfTestEnv) != "" {
		go selfTest(bg, d.rt)
	}
	// Windows: a clicked toast opens crosschat-relay://task/<id> with this exe.
	if exe, err := os.Executable(); err == nil {
		if err := desktop.RegisterURLScheme(exe); err != nil {
			d.log.Warn("toasts will not open their task", "err", err)
		}
	}
	d.log.Info("relay started", "dashboard", r.Config().BaseURL(), "mcp", r.Config().MCPURL(), "data", d.cfg.DataDir)
	return nil
}

// showRunning asks a relay already listening on our port (the first
// instance) to show its window.
func (d *desktopApp) showRunning() bool {
	token, err := d.cfg.AdminToken(false)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	host := d.cfg
	host.Host = "127.0.0.1"
	return client.New("http://"+host.Addr(), token).Call(ctx, "System", "Show", nil) == nil
}

func (d *desktopApp) rememberLoop(ctx context.Context) {
	tick.Every(ctx, 15*time.Second, func() {
		if err := d.win.remember(); err != nil {
			d.log.Warn("remember window position", "err", err)
		}
	})
}

func (d *desktopApp) beforeQuit() {
	if d.win == nil {
		return
	}
	if err := d.win.remember(); err != nil {
		d.log.Warn("remember window position", "err", err)
	}
}

func (d *desktopApp) shutdown() {
	if d.cancel != nil {
		d.cancel()
	}
	if d.presence != nil {
		d.presence.stop()
	}
	if d.relay == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.relay.Shutdown(ctx); err != nil {
		d.log.Error("shutdown", "err", err)
		d.exitCode = 1
	}
}

// URLScheme is the app's URL scheme (crosschat-relay://task/<id>): a
// program started with such a URL opens the window on that task.
const URLScheme = desktop.URLScheme
