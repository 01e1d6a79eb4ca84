package loglevel

import (
	"context"
	"log/slog"
)

// Floor returns h passing on records at or above min only; handlers derived
// from it (WithAttrs, WithGroup) keep the floor.
func Floor(h slog.Handler, min slog.Level) slog.Handler { return floor{h, min} }

type floor struct {
	slog.Handler
	min slog.Level
}

func (h floor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h floor) WithAttrs(as []slog.Attr) slog.Handler {
	return floor{h.Handler.WithAttrs(as), h.min}
}

func (h floor) WithGroup(name string) slog.Handler {
	return floor{h.Handler.WithGroup(name), h.min}
}
