package stream

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// natsLogger hands the NATS server's log to slog. Its notices (start-up
// banner, connections) are debug: the node logs what an operator needs (the
// listener, leaf links going up and down) itself. A fatal message is also kept,
// because NATS only logs a listen failure and Start must return it.
type natsLogger struct {
	log *slog.Logger

	mu        sync.Mutex
	lastFatal string
}

func (l *natsLogger) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *natsLogger) Warnf(format string, v ...any) {
	level := slog.LevelWarn
	if strings.HasPrefix(format, "Plaintext passwords detected") {
		// The one password is the in-process connections', made for this run
		// and held only in memory (natsUsers): nothing to hash.
		level = slog.LevelDebug
	}
	l.emit(level, format, v)
}
func (l *natsLogger) Errorf(format string, v ...any) {
	level := slog.LevelError
	if strings.HasPrefix(format, leafRedialFormat) {
		// A hub that is down is an expected state, not a fault of the node:
		// NATS redials every few seconds, and the node has already recorded
		// the link going down (peer.disconnected) and warned once a redial.
		level = slog.LevelWarn
	}
	if strings.Contains(format, " - cid:") {
		// A port client refused at login (no or a wrong token) or at its TLS
		// handshake is the client's failure, as a 401 is over HTTP: at
		// error level, anyone able to reach the port could fill the log.
		if msg := fmt.Sprintf(format, v...); strings.Contains(msg, "authentication error") || strings.Contains(msg, "TLS handshake error") {
			level = slog.LevelDebug
		}
	}
	l.emit(level, format, v)
}

// leafRedialFormat starts the message NATS logs for each failed redial of a
// leaf link (nats-server/v2 server/leafnode.go).
const leafRedialFormat = "Error trying to connect as leafnode to remote server"

func (l *natsLogger) Debugf(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *natsLogger) Tracef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Fatalf must not exit: the node, not NATS, decides when the process ends.
func (l *natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.lastFatal = msg
	l.mu.Unlock()
	l.log.Error("nats: " + msg)
}

func (l *natsLogger) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastFatal
}

func (l *natsLogger) emit(level slog.Level, format string, v []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, "nats: "+fmt.Sprintf(format, v...))
}
