package mcp

import (
	"context"
	"log/slog"
)

// libLogger is the logger mcp-go gets: its Info records filed as Debug.
// Its notes are for debugging it, and one comes with every MCP client's
// connection ("Rejected GET request: streaming is disabled": a client
// asks for a stream this relay does not offer, then goes on by POST), so
// at Info they filled an operator's log. Its warnings and errors stay.
func libLogger(l *slog.Logger) *slog.Logger { return slog.New(infoAsDebug{l.Handler()}) }

// infoAsDebug is a slog.Handler that lowers Info records to Debug.
type infoAsDebug struct{ slog.Handler }

func lower(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (h infoAsDebug) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, lower(l))
}

func (h infoAsDebug) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h infoAsDebug) WithAttrs(as []slog.Attr) slog.Handler {
	return infoAsDebug{h.Handler.WithAttrs(as)}
}

func (h infoAsDebug) WithGroup(name string) slog.Handler {
	return infoAsDebug{h.Handler.WithGroup(name)}
}
