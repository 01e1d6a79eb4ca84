package http

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/projections"
)

// BenchmarkHandlerChain measures the HTTP layer's own cost of a mission create,
// in process and without TCP: the request goes through the server's whole
// handler chain (request log and metrics, security headers, connection
// admission, content-coding check, router, handler timeout and its buffer,
// authentication, rate limit, query check) to a handler that decodes the
// create's body as handleCreateMission does and answers a typical mission
// record with writeJSON, but stops short of the commands and the log.
//
//   - chain: the whole chain, as above;
//   - handler: the same handler called directly, without the chain;
//
// so chain − handler is the middleware's cost per request. The clients run in
// parallel (b.RunParallel, 64 per core with -cpu N: -test.cpu sets GOMAXPROCS,
// SetParallelism the goroutines per core). See docs/benchmarks.md, "The HTTP
// layer".
//
//	go test ./http -run '^$' -bench HandlerChain -benchmem -count 6
func BenchmarkHandlerChain(b *testing.B) {
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: ed25519.NewKeyFromSeed(testSeed),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	s := New(Options{Log: l, OwnerToken: testToken, Logger: slog.New(slog.DiscardHandler)})
	body := benchBodies[0].body
	rec := benchMissionRecord()
	h := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		var in commands.CreateMissionInput
		if err := s.decodeJSON(w, r, &in); err != nil {
			return err
		}
		return writeJSON(w, rec)
	}
	s.handle(http.MethodPost, "/bench/missions", h, 0)

	run := func(b *testing.B, serve func(w http.ResponseWriter, r *http.Request)) {
		b.ReportAllocs()
		b.SetParallelism(32) // 64 clients on 2 cores
		cpu0 := processCPU()
		defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
		b.RunParallel(func(pb *testing.PB) {
			r, err := http.NewRequest(http.MethodPost, "/bench/missions", nil)
			if err != nil {
				b.Error(err)
				return
			}
			r.Header.Set("Authorization", "Bearer "+testToken)
			r.Header.Set("Content-Type", "application/json")
			r.RemoteAddr = "127.0.0.1:40000"
			r.ContentLength = int64(len(body))
			rd := &benchBody{}
			w := &benchWriter{h: make(http.Header)}
			for pb.Next() {
				rd.Reset(body)
				r.Body = rd
				clear(w.h)
				w.status, w.n = 0, 0
				serve(w, r)
				if w.status != http.StatusOK {
					b.Errorf("status %d", w.status)
					return
				}
			}
		})
	}
	b.Run("chain", func(b *testing.B) {
		run(b, s.ServeHTTP)
	})
	b.Run("handler", func(b *testing.B) {
		run(b, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r, nil); err != nil {
				b.Error(err)
			}
		})
	})
}

// benchBody is a request body that can be reset without allocating.
type benchBody struct{ bytes.Reader }

func (*benchBody) Close() error { return nil }

// benchWriter is a ResponseWriter that keeps the status and counts the body,
// as net/http's would without the connection.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.h }

// SetReadDeadline and SetWriteDeadline succeed, as net/http's do (the timeout
// wrapper sets them through http.ResponseController).
func (w *benchWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *benchWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *benchWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *benchWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}

// benchMissionRecord is the record a create of benchBodies' mission answers.
func benchMissionRecord() projections.MissionRecord {
	str := func(s string) *string { return &s }
	return projections.MissionRecord{
		MissionID: "m_0f3c8a52d1e94b7c8e1f2a3b4c5d6e7f", Title: "Escort the convoy",
		Description: "Escort the ore convoy from the dock to the refinery, keep it whole, and report the route.",
		State:       "open", Publisher: "pub", PublisherKind: "organization", Domain: "security", SubnetID: "genesis",
		ZoneID: str("dock"), RequiredRole: str("enforcer"), RequiredFaction: str("order"),
		Reward:    events.Reward{AgentCredit: 25, Reputation: 3, Capacity: 1, TreasuryShareCredit: 5},
		Payload:   json.RawMessage(`{"cargo":{"grade":"B","ore_t":120},"escorts":2,"notes":"Bring the manifest; the harbour master checks it.","route":["dock","refinery"]}`),
		CreatedAt: "2026-11-26T11:00:00.123456Z", UpdatedAt: "2026-11-26T11:00:00.123456Z",
	}
}
