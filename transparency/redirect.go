package transparency

import "github.com/civnode/civnode/internal/sameorigin"

// maxRedirects is how many redirects in a row a Client of NewObserverClient
// follows (a CDN that moves a path, adds a slash, or sends a GET to its
// current copy), each within the scheme, host and port it was given.
const maxRedirects = 3

// sameOriginRedirect is the CheckRedirect of NewObserverClient and Behind:
// anywhere but the origin the operator named a token would follow, and what
// is read would come from a host the operator did not name. Go's client
// resends the Authorization header only on a redirect within the same host,
// which this rule implies. A refusal is ErrRedirect.
var sameOriginRedirect = sameorigin.Redirects(maxRedirects, ErrRedirect)
