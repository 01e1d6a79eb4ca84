package http

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
)

// A query string that does not parse, or names a parameter twice, has no single
// meaning; net/url drops the pair it cannot read, which used to turn a filter
// into no filter and answer every record.
func TestMalformedQueryIsRefused(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents("mission.created", "payment.settled", "mission.claimed")
	for _, c := range []struct {
		name, path, field string
	}{
		{"semicolon after a filter", "/v1/events?type=payment.settled;", "type"},
		{"semicolon as separator", "/v1/events?type=payment.settled;limit=1", "type"},
		{"bad escape in a value", "/v1/events?type=%zz", "type"},
		{"bad escape in a name", "/v1/events?ty%zzpe=payment.settled", "ty%zzpe"},
		{"repeated filter", "/v1/events?type=payment.settled&type=mission.created", "type"},
		{"repeated limit", "/v1/events?limit=1&limit=2", "limit"},
		{"audit action with semicolon", "/v1/audit?action=token.*;", "action"},
		{"health too", "/v1/health?x=%", "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n.get(c.path).wantError(t, http.StatusBadRequest, "invalid_query", c.field)
		})
	}
	// A well-formed query still filters; an escaped semicolon is just a character.
	var page struct {
		Events []struct{ Type string } `json:"events"`
	}
	n.get("/v1/events?type=payment.settled").decode(t, &page)
	if len(page.Events) != 1 || page.Events[0].Type != "payment.settled" {
		t.Errorf("filtered page: %+v", page.Events)
	}
	n.get("/v1/events?type=payment.settled%3B").wantError(t, http.StatusBadRequest, "invalid_field", "type")
}

// HEAD is GET without a body, on every GET route.
func TestHeadOnGetRoutes(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents("mission.created")
	for _, path := range []string{"/v1/health", "/v1/state", "/v1/events", "/v1/audit", "/v1/game/catalog"} {
		get := n.request(http.MethodGet, path, testToken, nil)
		head := n.request(http.MethodHead, path, testToken, nil)
		if head.status != http.StatusOK || get.status != http.StatusOK {
			t.Errorf("HEAD %s: %d, GET %d", path, head.status, get.status)
		}
		if len(head.body) != 0 {
			t.Errorf("HEAD %s has a body of %d bytes", path, len(head.body))
		}
		if ct := head.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("HEAD %s Content-Type %q", path, ct)
		}
	}
	// Authentication applies as to GET.
	if r := n.request(http.MethodHead, "/v1/events", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("HEAD without a token: %d", r.status)
	}
	// HEAD of the export sends no bundle and seals nothing.
	before := len(n.auditEntries("export.sealed"))
	if r := n.request(http.MethodHead, "/v1/events/export", testToken, nil); r.status != http.StatusOK || len(r.body) != 0 {
		t.Errorf("HEAD export: %d, %d bytes", r.status, len(r.body))
	}
	if after := len(n.auditEntries("export.sealed")); after != before {
		t.Errorf("HEAD export audited %d export.sealed entries", after-before)
	}

	// Every GET route of a full node answers HEAD.
	full := newCivNode(t)
	for _, path := range []string{
		"/v1/health", "/v1/state", "/v1/events", "/v1/events/export", "/v1/audit", "/v1/admin/tokens",
		"/v1/game/catalog", "/v1/game/status", "/v1/game/bootstrap", "/v1/game/starter-missions", "/v1/game/mission-pack",
		"/v1/core/missions", "/v1/core/missions/x", "/v1/supervision/missions",
		"/v1/civilization/identities", "/v1/civilization/public-identity", "/v1/civilization/controller-binding",
		"/v1/civilization/profile", "/v1/civilization/metrics", "/v1/civilization/briefing",
		"/v1/supervision/identities", "/v1/supervision/home", "/v1/supervision/briefing",
	} {
		if h, _, _ := full.srv.router.Lookup(http.MethodGet, path); h == nil {
			t.Errorf("GET %s is not a route", path)
		}
		if h, _, _ := full.srv.router.Lookup(http.MethodHead, path); h == nil {
			t.Errorf("HEAD %s is not served", path)
		}
	}
}

// A request with two Authorization headers is refused before either is tried:
// a proxy and the node could each pick a different one.
func TestTwoAuthorizationHeaders(t *testing.T) {
	n := newTestNode(t)
	for _, second := range []string{"Bearer " + testToken, "Bearer nope"} {
		req, err := http.NewRequest(http.MethodGet, n.url+"/v1/state", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Add("Authorization", "Bearer "+testToken)
		req.Header.Add("Authorization", second)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		response{status: resp.StatusCode, header: resp.Header, body: b}.wantError(t, http.StatusBadRequest, "invalid_header", "Authorization")
	}
	if n := len(n.auditEntries("auth.failed")); n != 0 {
		t.Errorf("%d auth.failed entries; a malformed request is not a failed login", n)
	}
}

// A body in a content coding is refused: the node would otherwise read gzip bytes
// as JSON, or sign what a decoding proxy passed on instead of what was sent.
func TestContentEncodingIsRefused(t *testing.T) {
	n := newCivNode(t)
	body := `{"display_name":"Ada"}`
	for _, enc := range []string{"gzip", "deflate", "br", "identity, gzip"} {
		r := n.request(http.MethodPost, "/v1/civilization/bootstrap-identity", testToken, strings.NewReader(body),
			"Content-Type", "application/json", "Content-Encoding", enc)
		r.wantError(t, http.StatusUnsupportedMediaType, "unsupported_content_encoding", "Content-Encoding")
		if got := r.header.Get("Accept-Encoding"); got != "identity" {
			t.Errorf("%s: Accept-Encoding %q, want identity", enc, got)
		}
	}
	if tip := n.log.Tip().Seq; tip != 1 {
		t.Fatalf("tip %d after refused bodies, want 1 (genesis only)", tip)
	}
	r := n.request(http.MethodPost, "/v1/civilization/bootstrap-identity", testToken, strings.NewReader(body),
		"Content-Type", "application/json", "Content-Encoding", "identity")
	if r.status != http.StatusOK {
		t.Errorf("identity coding: %d %s", r.status, r.body)
	}
}

// net/http answers a malformed request or oversized headers itself, before any
// handler; those answers still come in the JSON error shape.
func TestServerOwnErrorsAreJSON(t *testing.T) {
	l := newTestNode(t).log
	s := New(Options{Log: l, OwnerToken: testToken, Logger: discardLogger()})
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	for _, c := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"headers too large", "GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", maxHeaderBytes+8192) + "\r\n\r\n",
			http.StatusRequestHeaderFieldsTooLarge, "headers_too_large"},
		{"no host", "GET /v1/health HTTP/1.1\r\n\r\n", http.StatusBadRequest, "bad_request"},
		{"malformed header", "GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", http.StatusBadRequest, "bad_request"},
		{"unknown transfer coding", "POST /v1/health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", http.StatusNotImplemented, "not_implemented"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			go io.WriteString(conn, c.request) // the server may answer before it has read it all
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			response{status: resp.StatusCode, header: resp.Header, body: b}.wantError(t, c.status, c.code, "")
			wantDefaultHeaders(t, c.name, resp.Header)
		})
	}
	// Ordinary answers pass through the same conns untouched.
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "{\"status\":\"ok\"}\n" {
		t.Errorf("health through the wrapped listener: %d %q", resp.StatusCode, b)
	}
}

func TestRewriteGoErrorLeavesOtherWritesAlone(t *testing.T) {
	for _, p := range []string{
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: x\r\n\r\n{}",
		"HTTP/1.1 200 OK" + goErrorHeaders + "200 OK", // not an error status
		"HTTP/1.1 400 Bad Request\r\nDate: x" + goErrorHeaders + "x",
		`{"events":[` + "HTTP/1.1 400 Bad Request" + goErrorHeaders,
		"",
	} {
		if out, ok := rewriteGoError([]byte(p)); ok {
			t.Errorf("rewrote %q into %q", p, out)
		}
	}
}

// A handler that times out while the client still owes body bytes answers 503 at
// once. net/http used to try to read the rest of the body first, so the answer
// waited for the read timeout (30 s in production; none at all here).
func TestTimeoutWithUnreadBodyIsDeliveredAtOnce(t *testing.T) {
	n := newTestNodeWith(t, func(o *Options) { o.HandlerTimeout = 100 * time.Millisecond }, func(s *Server) {
		s.handle(http.MethodPost, "/test/body", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			var v map[string]any
			if err := s.decodeJSON(w, r, &v); err != nil {
				return err
			}
			return writeJSON(w, v)
		}, 0)
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /test/body HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":\"bcd", testToken)
	// The server has no read timeout here: without the fix this read would wait
	// until the deadline, which is far beyond the handler timeout.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a request whose handler timed out: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e errorBody
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusServiceUnavailable || e.Code != "timeout" {
		t.Fatalf("answer %d %s, want 503 timeout", resp.StatusCode, b)
	}
	if !resp.Close {
		t.Error("the connection stays open although the body was not read to its end")
	}
}
