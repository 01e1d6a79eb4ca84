package http

import (
	"log/slog"
	"net/http"
	"time"
)

// logRequests logs every request at Debug once it is answered, and records it
// in the metrics under its route pattern. It logs the path only: query strings
// and headers can carry tokens.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			status := rec.status
			if !rec.wroteHeader {
				status = http.StatusOK // net/http's implicit status
			}
			took := time.Since(start)
			if rec.route != nil {
				rec.route.observe(status, took)
			} else {
				s.metrics.observeRequest(r.Method, "", status, took)
			}
			// The attributes are built only when they will be logged.
			if s.logger.Enabled(r.Context(), slog.LevelDebug) {
				s.logger.LogAttrs(r.Context(), slog.LevelDebug, "http request",
					slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.Int("status", status), slog.Duration("duration", took),
					slog.Int64("bytes", rec.bytes))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status and size of a response. Unwrap lets
// http.ResponseController reach the connection (write deadlines, flushing).
type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	bytes       int64
	route       *routeMetrics // the metrics of the registered route that served it; nil when none did
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wroteHeader && status >= 200 {
		r.status, r.wroteHeader = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = http.StatusOK, true
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
