package http

import "net/http"

// defaultCSP is the Content-Security-Policy of every response but the
// console's files. The API answers JSON, which no browser should ever run,
// style, frame or fetch anything for: should a browser be led to render an
// answer (an error that echoes a value, say), the page it makes can do
// nothing.
const defaultCSP = "default-src 'none'; frame-ancestors 'none'"

// secureHeaders sets strict defaults on every response before the router sees
// the request, so that the answers written around the handlers (404, 405, the
// refusals of authentication and of content encodings, a timeout's 503) carry
// them too. A handler that serves something a browser is meant to render
// replaces them: the console sets its own policy (console.go).
//
// nosniff keeps a browser from reading JSON as HTML or script, and
// no-referrer keeps the console's address, and anything in it, out of the
// requests it makes.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", defaultCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
