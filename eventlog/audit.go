package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"
)

// AuditEntry records one administrative action (docs/api.md). Audit entries are
// not chained and not signed; they live in their own key space.
type AuditEntry struct {
	ID        string          `json:"id"`
	Action    string          `json:"action"`
	Actor     string          `json:"actor"`
	Timestamp string          `json:"timestamp"`
	Detail    json.RawMessage `json:"detail"`
}

// Audit durably records an action. detail must never hold a secret; nil is
// recorded as {}.
func (l *Log) Audit(ctx context.Context, action, actor string, detail any) (AuditEntry, error) {
	if err := ctx.Err(); err != nil {
		return AuditEntry{}, err
	}
	if err := l.Healthy(); err != nil {
		return AuditEntry{}, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if !ValidType(action) {
		return AuditEntry{}, fmt.Errorf("audit action %q is not dot notation", action)
	}
	if detail == nil {
		detail = struct{}{}
	}
	d, err := json.Marshal(detail)
	if err != nil {
		return AuditEntry{}, fmt.Errorf("audit detail: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return AuditEntry{}, fmt.Errorf("audit entry id: %w", err)
	}
	// The timestamp is the key, so it is unique and strictly increasing like the
	// chain's, and since= is a seek.
	l.auditMu.Lock()
	defer l.auditMu.Unlock()
	micros := l.now().UnixMicro()
	if micros <= l.auditLast {
		micros = l.auditLast + 1
	}
	e := AuditEntry{ID: id.String(), Action: action, Actor: actor, Timestamp: formatMicros(micros), Detail: d}
	v, err := json.Marshal(e)
	if err != nil {
		return AuditEntry{}, fmt.Errorf("encode audit entry: %w", err)
	}
	if err := withFatal(func() error { return l.db.Set(auditKey(micros), v, pebble.Sync) }); err != nil {
		// A failed fsync leaves the disk's state unknown for the chain too.
		l.mu.Lock()
		l.failed = fmt.Errorf("write audit entry: %w", err)
		l.mu.Unlock()
		return AuditEntry{}, l.failed
	}
	l.auditLast = micros
	return e, nil
}

// AuditQuery selects audit entries.
type AuditQuery struct {
	Since  time.Time // entries strictly after; zero for all
	Action string    // exact, or a prefix when it ends in ".*"; empty for all
	Limit  int
	// Bytes, if not 0, ends the result before the entry that would take the
	// stored entries past it; the first entry is always returned.
	Bytes int
}

// AuditEntries returns matching entries, oldest first.
func (l *Log) AuditEntries(q AuditQuery) ([]AuditEntry, error) {
	entries, _, err := l.AuditPage(context.Background(), q)
	return entries, err
}

// AuditPage is AuditEntries that stops when ctx is done and reports whether
// q.Bytes cut the result short.
func (l *Log) AuditPage(ctx context.Context, q AuditQuery) (entries []AuditEntry, cut bool, err error) {
	lower := []byte{spaceAudit}
	if !q.Since.IsZero() {
		lower = auditKey(max(q.Since.UnixMicro()+1, 0))
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{spaceAudit + 1}})
	if err != nil {
		return nil, false, fmt.Errorf("read audit entries: %w", l.readFault(err))
	}
	defer it.Close()
	prefix, isPrefix := strings.CutSuffix(q.Action, "*")
	entries = []AuditEntry{}
	size := 0
	for valid := it.First(); valid && len(entries) < q.Limit; valid = it.Next() {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		var e AuditEntry
		if err := json.Unmarshal(it.Value(), &e); err != nil {
			return nil, false, fmt.Errorf("decode audit entry: %w", err)
		}
		if q.Action != "" && e.Action != q.Action && !(isPrefix && strings.HasPrefix(e.Action, prefix)) {
			continue
		}
		if q.Bytes > 0 && len(entries) > 0 && size+len(it.Value()) > q.Bytes {
			return entries, true, nil
		}
		size += len(it.Value())
		entries = append(entries, e)
	}
	if err := it.Error(); err != nil {
		return nil, false, fmt.Errorf("read audit entries: %w", l.readFault(err))
	}
	return entries, false, nil
}
