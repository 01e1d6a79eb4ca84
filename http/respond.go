package http

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// marshalJSON encodes v without HTML escaping: event payloads and audit details
// are served byte for byte as stored (RFC 8785 does not escape <, > or &), and the
// API is never embedded in HTML.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeJSON answers 200 with v. It encodes v fully before writing anything, so an
// encoding error can still become a 500; the caller returns that error.
func writeJSON(w http.ResponseWriter, v any) error {
	b, err := marshalJSON(v)
	if err != nil {
		return err
	}
	writeBody(w, http.StatusOK, b)
	return nil
}

// setJSONHeaders marks a response as JSON that no cache or sniffer may reinterpret;
// responses carry node state that changes with every event.
func setJSONHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
}

// writeBody writes an encoded JSON body. A write error means the client has gone;
// there is no one left to tell.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
