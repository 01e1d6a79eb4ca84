package http

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// Sealed exports are audited at most once a second, with a small burst, like
// failed authentications: an observer token may export as often as it likes, but
// each entry costs an fsync and a record kept for good, so a loop of exports must
// not grow the audit log at the speed of the disk.
const (
	exportAuditRate  = rate.Limit(1)
	exportAuditBurst = 5
)

// exportAudit writes the export.sealed entries. Exports beyond the rate are not
// dropped but coalesced: the newest one waits until the limiter admits an entry,
// and that entry names it and counts, in coalesced, the earlier exports sealed
// since the previous entry that it stands for. Every export is therefore
// counted, one entry per second at most; only the ids of coalesced exports are
// not kept.
type exportAudit struct {
	log     *eventlog.Log
	logger  *slog.Logger
	limiter *rate.Limiter

	mu      sync.Mutex
	pending *pendingExport // the newest export not yet recorded
	timer   *time.Timer    // writes pending when the limiter admits it
}

type pendingExport struct {
	actor  string
	detail exportSealedDetail
}

func newExportAudit(log *eventlog.Log, logger *slog.Logger) *exportAudit {
	return &exportAudit{log: log, logger: logger, limiter: rate.NewLimiter(exportAuditRate, exportAuditBurst)}
}

// sealed records an export that was sent whole.
func (a *exportAudit) sealed(actor string, d exportSealedDetail) {
	a.mu.Lock()
	if a.pending == nil && a.limiter.Allow() {
		a.mu.Unlock()
		a.write(pendingExport{actor: actor, detail: d})
		return
	}
	defer a.mu.Unlock()
	if a.pending != nil {
		d.Coalesced = a.pending.detail.Coalesced + 1
		a.pending.actor, a.pending.detail = actor, d
		return
	}
	a.pending = &pendingExport{actor: actor, detail: d}
	// Reserve takes the limiter's next token for this entry, so the entry is
	// within the rate when the timer writes it.
	a.timer = time.AfterFunc(a.limiter.Reserve().Delay(), a.flush)
}

// flush writes the pending entry, if any.
func (a *exportAudit) flush() {
	a.mu.Lock()
	p := a.pending
	a.pending, a.timer = nil, nil
	a.mu.Unlock()
	if p != nil {
		a.write(*p)
	}
}

// close writes what is pending at once, for a server that stops serving.
func (a *exportAudit) close() {
	a.mu.Lock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()
	a.flush()
}

// write appends one entry. A failure is logged: the export has been sent, and
// the audit cannot take it back.
func (a *exportAudit) write(p pendingExport) {
	if _, err := a.log.Audit(context.Background(), "export.sealed", p.actor, p.detail); err != nil {
		a.logger.Warn("audit export.sealed", logkey.ExportID, p.detail.ExportID, logkey.Coalesced, p.detail.Coalesced, logkey.Err, err)
	}
}
