package http

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEventBundleLargerThanTheBudget: an event bundle is streamed, not held
// in the response budget, so a bundle of 256 large events is served whole
// even when it is larger than the whole budget (one page of 16 MiB here),
// with the Content-Length a static host of the same bytes sends. Buffered,
// it was answered 503 busy for ever, and a mirror could not follow.
func TestEventBundleLargerThanTheBudget(t *testing.T) {
	n := newBudgetNode(t, 100*time.Millisecond, 30*time.Second, make(chan error, 4))
	var want []byte
	err := n.srv.log.ScanRaw(context.Background(), 1, bundleSize, func(_ uint64, raw []byte) error {
		want = append(append(want, raw...), '\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= budgetPage {
		t.Fatalf("the bundle is %d bytes, not over the budget of %d", len(want), budgetPage)
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := n.request(method, "/v1/transparency/events/000", testToken, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: status %d (body %.200s)", method, r.status, r.body)
		}
		if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(want)) {
			t.Errorf("%s: Content-Length %s, want %d", method, got, len(want))
		}
		if method == http.MethodGet && !bytes.Equal(r.body, want) {
			t.Errorf("GET: %d bytes, not the %d stored", len(r.body), len(want))
		}
	}
	waitBudgetFree(t, n.srv.budget)
}

// TestEventBundleHoldsNoBudget: a client that reads the start of a large
// bundle and then stops holds none of the response budget (the bundle waits
// in the socket, not in memory), so a reader of a full page is served
// meanwhile rather than answered 503 busy.
func TestEventBundleHoldsNoBudget(t *testing.T) {
	n := newBudgetNode(t, 100*time.Millisecond, 30*time.Second, make(chan error, 4))
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/transparency/events/000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadFull(conn, make([]byte, 1<<20)); err != nil {
		t.Fatalf("the start of the bundle: %v", err)
	}
	if used := n.srv.budget.inUse.Load(); used != 0 {
		t.Fatalf("a bundle being sent holds %d bytes of the response budget", used)
	}
	p, heads := eventsOf(t, n.get("/v1/events?limit=1000"))
	if len(heads) == 0 || p.Total < 300 {
		t.Fatalf("the reader got %d events of %d", len(heads), p.Total)
	}
}
