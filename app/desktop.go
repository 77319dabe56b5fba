package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"time"

	"github.com/wailsapp/wails/v2"
	"github.com/wailsapp/wails/v2/pkg/options"
	"github.com/wailsapp/wails/v2/pkg/options/assetserver"
)

// Desktop runs the desktop app: a native window hosting the dashboard, with
// the relay running in the same process. Nothing is opened before wails.Run
// (binding generation runs the binary); the relay starts in OnStartup.
func Desktop(args []string, assets fs.FS, version string, stderr io.Writer) int {
	cfg, err := parseServe("desktop", args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "crosschat-relay:", err)
		return 2
	}
	services := NewServices(version)
	var r *Relay
	log := slog.New(slog.NewTextHandler(stderr, nil))
	err = wails.Run(&options.App{
		Title:       "Crosschat Relay",
		Width:       1280,
		Height:      820,
		MinWidth:    1024,
		MinHeight:   700,
		StartHidden: cfg.Hidden,
		AssetServer: &assetserver.Options{Assets: assets},
		OnStartup: func(ctx context.Context) {
			var err error
			r, err = Start(cfg, StartOptions{Version: version, Assets: assets, Logger: log, Services: services})
			if err != nil {
				log.Error("relay failed to start", "err", err)
			}
		},
		OnShutdown: func(ctx context.Context) {
			if r == nil {
				return
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := r.Shutdown(sctx); err != nil {
				log.Error("shutdown", "err", err)
			}
		},
		Bind: services.List(),
	})
	if err != nil {
		fmt.Fprintln(stderr, "crosschat-relay:", err)
		return 1
	}
	return 0
}
