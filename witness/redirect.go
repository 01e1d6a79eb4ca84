package witness

import (
	"net/http"

	"github.com/civnode/civnode/internal/sameorigin"
)

// maxRedirects is how many redirects in a row the submitter follows, all on
// the witness's own scheme, host and port (a move of its path, say).
const maxRedirects = 3

// withRedirectRule is c with its CheckRedirect replaced by the same-origin
// rule, so that no client the submitter is given re-posts a checkpoint (or the
// credentials of its URL) anywhere but the witness the operator named. A
// refusal is ErrRedirect, the witness failing.
func withRedirectRule(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = sameorigin.Redirects(maxRedirects, ErrRedirect)
	return &cc
}
