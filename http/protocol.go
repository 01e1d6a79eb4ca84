package http

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// refuseContentEncoding answers 415 to a request whose body is content-coded
// (gzip, deflate, …). The node does not decode bodies, and reading compressed
// bytes as JSON would fail later with a misleading invalid_json, or, worse, a
// proxy that decodes for one hop but not another would make the node sign
// different bytes than the client meant. "identity" is no coding and passes.
func (s *Server) refuseContentEncoding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, v := range r.Header.Values("Content-Encoding") {
			for coding := range strings.SplitSeq(v, ",") {
				if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
					// RFC 9110 §15.5.16: say which codings are accepted.
					w.Header().Set("Accept-Encoding", "identity")
					s.writeError(w, r, errContentEncoding)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// jsonErrorListener wraps the conns of a listener so that the answers net/http
// writes on its own, before any handler runs (400 for a malformed request line
// or header, 431 for headers over MaxHeaderBytes, 501 for an unknown
// transfer coding), come out in the error shape of every other answer, as
// JSON. net/http has no hook for them: it writes each one to the connection in
// a single write with exactly the headers errorHeaders below and nothing else
// (no Date, which every response through a handler carries), so such a write is
// recognised whole and rewritten. If a Go release changes that format, the
// answers go out as Go writes them (TestServerOwnErrorsAreJSON says so).
type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{c}, nil
}

type jsonErrorConn struct{ net.Conn }

// goErrorHeaders are the headers net/http's own error answers carry
// (net/http/server.go, conn.serve).
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c jsonErrorConn) Write(p []byte) (int, error) {
	if out, ok := rewriteGoError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// rewriteGoError turns one of net/http's own plain-text error answers into the
// JSON error shape; ok is false for every other write.
func rewriteGoError(p []byte) (out []byte, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !found {
		return nil, false
	}
	statusLine, text, found := bytes.Cut(rest, []byte(goErrorHeaders))
	if !found || bytes.ContainsAny(statusLine, "\r\n") || len(statusLine) < 4 || statusLine[3] != ' ' {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	// The text repeats the status ("400 Bad Request: missing required Host
	// header"); the message is what follows it, or the reason phrase.
	msg := string(text)
	if _, after, found := strings.Cut(msg, ": "); found {
		msg = after
	} else if len(msg) > 4 && msg[3] == ' ' {
		msg = msg[4:]
	}
	if status == http.StatusRequestHeaderFieldsTooLarge {
		msg = "request headers are larger than " + strconv.Itoa(maxHeaderBytes) + " bytes"
	}
	body, err := marshalJSON(errorBody{Error: msg, Code: goErrorCode(status)})
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 ")
	b.Write(statusLine)
	// The default headers of every answer (secheaders.go), which this one,
	// written before any handler, does not pass through.
	b.WriteString("\r\nContent-Type: application/json\r\nContent-Security-Policy: " + defaultCSP +
		"\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: ")
	b.WriteString(strconv.Itoa(len(body)))
	b.WriteString("\r\n\r\n")
	b.Write(body)
	return b.Bytes(), true
}

// goErrorCode is the code of one of net/http's own answers.
func goErrorCode(status int) string {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return codeHeadersTooLarge
	case http.StatusNotImplemented:
		return codeNotImplemented
	default:
		return codeBadRequest
	}
}
