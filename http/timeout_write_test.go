package http

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/julienschmidt/httprouter"
)

// A client that asks for a large page and never reads it is dropped at the write
// deadline: the copy out fails, the request goroutine returns, and the connection
// is closed, so the client's reads end before the body does.
func TestSilentClientIsDropped(t *testing.T) {
	sent := make(chan error, 1)
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = 64 << 20 }, func(s *Server) {
		s.writeTimeout = 300 * time.Millisecond
		s.responseSent = func(err error) { sent <- err }
	})
	// 200 events of 64 KiB: a 13 MB page, far more than the socket buffers hold.
	pads := make([]int, 200)
	for i := range pads {
		pads[i] = 64 << 10
	}
	n.appendPadded("mission.completed", pads...)

	conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/events?limit=1000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", testToken)

	select {
	case err := <-sent:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("copying the page out ended with %v, want the write deadline", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the response to a client that does not read was not cut off")
	}

	// Now read at full speed: what the kernels had buffered arrives, then the
	// connection ends. (The server's kernel delivers its send buffer after the
	// close, so a client that shrank its receive window would wait on it.)
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response head: %v", err)
	}
	got, err := io.Copy(io.Discard, resp.Body)
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d of %d body bytes, then %v; want the server to have closed the connection", got, resp.ContentLength, err)
	}
	if got >= resp.ContentLength {
		t.Errorf("read the whole body (%d bytes) from a response that was cut off", got)
	}
}

// A write deadline is set for one response only: a later request on the same
// keep-alive connection is answered in full, on timed and untimed routes alike.
// (net/http lifts the deadline after each response; this holds it to that.)
func TestWriteDeadlineEndsWithItsResponse(t *testing.T) {
	n := newTestNodeWith(t, nil, func(s *Server) { s.writeTimeout = 100 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(conn)
	for i, path := range []string{"/v1/health", "/v1/nope", "/v1/events", "/v1/nope"} {
		if i > 0 {
			time.Sleep(300 * time.Millisecond) // well past the last response's deadline
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, testToken)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d (%s) on the kept-alive connection: %v", i, path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("request %d (%s): body: %v", i, path, err)
		}
		if want := strconv.Itoa(len(body)); resp.Header.Get("Content-Length") != want {
			t.Errorf("request %d (%s): Content-Length %q, body %d bytes", i, path, resp.Header.Get("Content-Length"), len(body))
		}
	}
}

// A timed handler that fails after writing part of its answer is answered with
// the error alone.
func TestErrorAfterPartialWriteIsWhole(t *testing.T) {
	n := newTestNodeWith(t, nil, func(s *Server) {
		s.handle(http.MethodGet, "/test/half", func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
			setJSONHeaders(w.Header())
			w.Write([]byte(`{"events":[{"half":`))
			return errors.New("store failed mid-page")
		}, 0)
	})
	r := n.get("/test/half")
	r.wantError(t, http.StatusInternalServerError, "internal", "")
	if containsBytes(r.body, "half") {
		t.Errorf("the partial answer leaked into the error: %s", r.body)
	}
}
