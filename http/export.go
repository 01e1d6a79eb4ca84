package http

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/stream"
)

// exportSealedDetail is the detail of the export.sealed audit entry.
type exportSealedDetail struct {
	ExportID     string `json:"export_id"`
	EventCount   uint64 `json:"event_count"`
	ChainTipHash string `json:"chain_tip_hash"`
	// Coalesced counts the earlier exports, sealed since the previous entry
	// beyond the audit rate, that this entry stands for (export_audit.go).
	Coalesced uint64 `json:"coalesced,omitempty"`
}

// handleExport answers GET /v1/events/export with a signed bundle of the whole
// chain (docs/wire-formats.md), streamed as the log writes it: a bundle can be far larger than
// memory, so it is never built whole. The route has no handler timeout; instead each
// write to the client must make progress within exportWriteIdle, so a stalled client
// is cut off while a long export that keeps moving runs to the end.
//
// Once bytes are on the wire the status is sent and a failure can no longer be
// reported in JSON; the connection is then aborted so the client sees a broken
// response, never a truncated one that looks complete.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	actor, ok := authenticatedActor(r.Context())
	if !ok {
		return errors.New("export: route is not authenticated")
	}
	wire := &deadlineWriter{w: w, rc: http.NewResponseController(w), idle: s.exportWriteIdle}

	h := w.Header()
	setJSONHeaders(h)
	h.Add("Vary", "Accept-Encoding")
	var out io.Writer = wire
	var gz *gzip.Writer
	if acceptsGzip(r.Header.Values("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		// Speed over ratio: compression runs inline with the stream, and hashes and
		// signatures do not compress much anyway.
		gz, _ = gzip.NewWriterLevel(wire, gzip.BestSpeed)
		out = gz
	}
	if r.Method == http.MethodHead {
		// The headers of the export without writing, or sealing, a bundle.
		w.WriteHeader(http.StatusOK)
		return nil
	}

	summary, err := s.log.WriteBundle(r.Context(), out, eventlog.BundleHeader{}, s.exportProgress)
	if err == nil && gz != nil {
		err = gz.Close()
	}
	if err != nil {
		if wire.n == 0 && r.Context().Err() == nil {
			// Nothing has been sent: the client can still get a proper error.
			h.Del("Content-Encoding")
			h.Del("Vary")
			return fmt.Errorf("export: %w", err)
		}
		level := slog.LevelWarn
		if r.Context().Err() != nil {
			level = slog.LevelInfo // the client went away; nothing is wrong here
		}
		s.logger.LogAttrs(r.Context(), level, "export cut short",
			slog.Int64(logkey.BytesSent, wire.n), slog.String(logkey.Err, err.Error()))
		panic(http.ErrAbortHandler)
	}

	// The bundle is complete; record it even if the client disconnects now.
	s.exportAudit.sealed(auditActor(actor), exportSealedDetail{
		ExportID: summary.ExportID, EventCount: summary.EventCount, ChainTipHash: summary.TipHash})
	// The audit coalesces a burst of exports; the notice does not, so an
	// observer on NATS can see, and check, every bundle the node has sealed.
	if st := s.streams.stream; st != nil {
		st.PublishExport(stream.ExportNotice{
			ExportID: summary.ExportID, NodeDID: s.log.NodeDID(),
			ChainRootHash: summary.RootHash, ChainTipHash: summary.TipHash, EventCount: summary.EventCount,
			GeneratedAt: summary.GeneratedAt, BundleSignature: summary.Signature,
		})
	}
	return nil
}

// deadlineWriter moves the connection's write deadline forward before every write
// and counts what it has passed on.
type deadlineWriter struct {
	w    io.Writer
	rc   *http.ResponseController
	idle time.Duration
	n    int64
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	// ErrNotSupported (a recorder in tests) has no connection to bound.
	_ = d.rc.SetWriteDeadline(time.Now().Add(d.idle))
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip with a
// non-zero quality (RFC 9110 §12.5.3).
func acceptsGzip(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q := 1.0
			for param := range strings.SplitSeq(params, ";") {
				k, val, ok := strings.Cut(param, "=")
				if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
					if err != nil {
						f = 0
					}
					q = f
				}
			}
			return q > 0
		}
	}
	return false
}
