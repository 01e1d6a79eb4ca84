package http

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// openAPIDocument is the OpenAPI 3.1 description of this API. It is written by
// hand, not derived from the handlers, so that it says what the API promises;
// openapi_test.go holds it to the route table, to the token kinds each route
// admits and to the official 3.1 schema.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPIETag names this build's document: it changes only with the binary.
var openAPIETag = func() string {
	sum := sha256.Sum256(openAPIDocument)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// handleOpenAPI answers GET /v1/openapi.json with the embedded document, byte
// for byte. Like the console it needs no token: it holds no node data, and
// code generators read it where no token is configured. The document is
// fixed per build, so a client may keep it and revalidate with
// If-None-Match; no-cache rather than the API's usual no-store allows exactly
// that.
func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	h := w.Header()
	setJSONHeaders(h)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", s.openAPITag)
	if etagMatches(r.Header.Get("If-None-Match"), s.openAPITag) {
		h.Del("Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.openAPIDoc) // a write error means the client has gone
	return nil
}
