package http

import (
	"crypto/rand"
	"encoding/hex"
	"github.com/civnode/civnode/internal/logkey"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// requestIDHeader carries the request id: the client's, if it sent a sane
// one, else one the server makes. Every response carries it, and the request's
// log line names it, so an answer and its log line can be matched.
const requestIDHeader = "X-Request-Id"

// maxRequestIDLen bounds a client's request id; a longer one is replaced.
const maxRequestIDLen = 128

// logRequests logs every request once it is answered, at Info (Debug for the
// quiet routes: probes and scrapes, which come every few seconds), and
// records it in the metrics under its route pattern. The line holds the
// method, the route pattern (never the path, whose query string or segments a
// client controls), the status, the duration, the bytes written, the remote
// address and the request id. It never holds a header or the query string,
// either of which can carry a token.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(requestIDHeader)
		if !saneRequestID(id) {
			id = s.requestIDs.next()
		}
		// Assigned rather than Set: the key is canonical already.
		w.Header()[requestIDHeader] = []string{id}
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			status := rec.status
			if !rec.wroteHeader {
				status = http.StatusOK // net/http's implicit status
			}
			took := time.Since(start)
			route := "unmatched"
			level := slog.LevelInfo
			if rm := rec.route; rm != nil {
				rm.observe(status, took)
				route = rm.route
				if rm.quiet {
					level = slog.LevelDebug
				}
			} else {
				s.metrics.observeRequest(r.Method, "", status, took)
			}
			// The attributes are built only when they will be logged.
			if s.logger.Enabled(r.Context(), level) {
				method := r.Method
				if rec.route == nil {
					method = knownMethod(method) // a client's free text otherwise
				}
				s.logger.LogAttrs(r.Context(), level, "http request",
					slog.String(logkey.Method, method), slog.String(logkey.Route, route),
					slog.Int(logkey.Status, status), slog.Duration(logkey.Duration, took),
					slog.Int64(logkey.Bytes, rec.bytes), slog.String(logkey.Remote, s.clientAddr(r)),
					slog.String(logkey.RequestID, id))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// saneRequestID accepts a client's request id of 1 to 128 characters of
// letters, digits and -._:/+= (UUIDs, hex, base64 and the usual tracing ids),
// which a log line and a header can carry as they are.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == ':', c == '/', c == '+', c == '=':
		default:
			return false
		}
	}
	return true
}

// requestIDs makes the server's request ids: a random prefix drawn once per
// server and a counter, so making one is an atomic add and one small string,
// and ids do not repeat across restarts.
type requestIDs struct {
	prefix string // 16 hex digits and "-"
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (g *requestIDs) next() string {
	var buf [40]byte
	b := append(buf[:0], g.prefix...)
	b = strconv.AppendUint(b, g.n.Add(1), 36)
	return string(b)
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
