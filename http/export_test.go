package http

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

func TestExportVerifies(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents(fixtureTypes...)
	tip := n.log.Tip()
	for _, tc := range []struct {
		name, acceptEncoding string
		gzipped              bool
	}{
		{"plain", "identity", false},
		{"gzip", "gzip", true},
		{"gzip among others", "br;q=1.0, gzip;q=0.5, *;q=0", true},
		{"gzip refused", "gzip;q=0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(n.auditEntries("export.sealed"))
			r := n.request(http.MethodGet, "/v1/events/export", testToken, nil, "Accept-Encoding", tc.acceptEncoding)
			if r.status != http.StatusOK {
				t.Fatalf("status %d (body %s)", r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if v := r.header.Get("Vary"); v != "Accept-Encoding" {
				t.Errorf("Vary = %q", v)
			}
			body := r.body
			if tc.gzipped {
				if ce := r.header.Get("Content-Encoding"); ce != "gzip" {
					t.Fatalf("Content-Encoding = %q, want gzip", ce)
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				var plain bytes.Buffer
				if _, err := plain.ReadFrom(zr); err != nil {
					t.Fatal(err)
				}
				body = plain.Bytes()
			} else if ce := r.header.Get("Content-Encoding"); ce != "" {
				t.Fatalf("Content-Encoding = %q, want none", ce)
			}
			rep, err := eventlog.VerifyBundle(context.Background(), bytes.NewReader(body), nil)
			if err != nil {
				t.Fatalf("bundle does not verify: %v", err)
			}
			if rep.EventCount != tip.Seq || rep.TipHash != tip.ID || rep.NodeDID != n.log.NodeDID() {
				t.Errorf("report %+v, tip %+v", rep, tip)
			}

			sealed := n.auditEntries("export.sealed")
			if len(sealed) != before+1 {
				t.Fatalf("%d export.sealed entries, want %d", len(sealed), before+1)
			}
			e := sealed[len(sealed)-1]
			if e.Actor != "token:owner" {
				t.Errorf("actor = %q, want token:owner", e.Actor)
			}
			var d map[string]any
			if err := json.Unmarshal(e.Detail, &d); err != nil {
				t.Fatal(err)
			}
			if len(d) != 3 || d["export_id"] != rep.ExportID || d["event_count"] != float64(rep.EventCount) ||
				d["chain_tip_hash"] != rep.TipHash {
				t.Errorf("detail = %s, want export_id %s, event_count %d, chain_tip_hash %s",
					e.Detail, rep.ExportID, rep.EventCount, rep.TipHash)
			}
		})
	}
}

// An export that outlasts the server's ReadTimeout still completes. A read
// deadline that fired during the handler would cancel the request's context;
// net/http lifts it once the request has been read, and this test keeps it so.
func TestExportOutlastsReadTimeout(t *testing.T) {
	l := newTestNode(t).log // reuse the fixture's log setup
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	s.readTimeout = 100 * time.Millisecond
	s.exportProgress = func(seq uint64) {
		if seq == 1 {
			time.Sleep(400 * time.Millisecond)
		}
	}
	url := serveForTest(t, s)
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/events/export", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := eventlog.VerifyBundle(context.Background(), resp.Body, nil); err != nil {
		t.Fatalf("bundle cut short: %v", err)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip"}, true},
		{[]string{"deflate", "gzip;q=0.1"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=bad"}, false},
		{[]string{"identity"}, false},
		{[]string{"x-gzip"}, false},
	} {
		if got := acceptsGzip(tc.values); got != tc.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tc.values, got, tc.want)
		}
	}
}

// serveForTest runs s.Serve on a loopback port until the test ends.
func serveForTest(t *testing.T, s *Server) string {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

// A client that stops reading is cut off once a write makes no progress for
// exportWriteIdle, and no export.sealed is recorded for the bundle it never got.
func TestExportStalledClientIsCutOff(t *testing.T) {
	var logs logBuffer
	l := newTestNode(t).log
	big := strings.Repeat("x", 1024)
	drafts := make([]eventlog.Draft, 8000)
	for i := range drafts {
		drafts[i] = eventlog.Draft{Type: "mission.created", Payload: map[string]any{"pad": big}}
	}
	if _, err := l.Append(context.Background(), drafts...); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Log: l, OwnerToken: testToken, Logger: debugLogger(&logs)})
	s.exportWriteIdle = 200 * time.Millisecond
	addr := strings.TrimPrefix(serveForTest(t, s), "http://")

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	fmt.Fprintf(conn, "GET /v1/events/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "export cut short") {
		if time.Now().After(deadline) {
			t.Fatal("a stalled export was not cut off")
		}
		time.Sleep(50 * time.Millisecond)
	}
	es, err := l.AuditEntries(eventlog.AuditQuery{Action: "export.sealed", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 0 {
		t.Errorf("export.sealed recorded for an export the client never received: %v", es)
	}
}
