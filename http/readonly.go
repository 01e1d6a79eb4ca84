package http

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// A server of a mirror's log (eventlog.Log.ReadOnly: civnode serve
// --mirror-of) serves another node's chain, verified, and never signs: every
// GET route answers as on the origin, folded from the same events, and every
// route that would write to the chain answers 403 read_only_mirror, after
// authentication. The mirror's own administration stays: the owner's token
// routes (its observers' tokens are its own, kept beside the chain) and
// backup. POST /mcp stays too, for its read tools; a write tool answers the
// same error.

// errReadOnlyMirror is every write to a mirror.
var errReadOnlyMirror = &Error{Status: http.StatusForbidden, Code: codeReadOnlyMirror,
	Message: "this node is a read-only mirror of another node's chain (read_only_mirror): write to the origin"}

// writesChain reports whether a route writes to the chain, and so is refused
// on a mirror.
func writesChain(method, path string) bool {
	if method == http.MethodGet || method == http.MethodHead {
		return false
	}
	return path != "/mcp" && path != "/v1/admin/backup" && !strings.HasPrefix(path, "/v1/admin/tokens")
}

// refuseOnMirror answers every request with errReadOnlyMirror.
func refuseOnMirror(http.ResponseWriter, *http.Request, httprouter.Params) error {
	return errReadOnlyMirror
}
