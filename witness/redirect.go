package witness

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects in a row the submitter follows, all on
// the witness's own scheme, host and port (a move of its path, say).
const maxRedirects = 3

// withRedirectRule is c with its CheckRedirect replaced by
// sameOriginRedirect, so that no client the submitter is given re-posts a
// checkpoint elsewhere.
func withRedirectRule(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = sameOriginRedirect
	return &cc
}

// sameOriginRedirect follows a redirect only to the scheme, host and port of
// the first request, and at most maxRedirects of them. A witness that points
// anywhere else is a failing witness: the node's checkpoint (and the
// credentials of its URL, if any) go only where the operator named.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if !sameOrigin(first, req.URL) {
		return fmt.Errorf("%w: the witness at %s redirected to %s, another scheme, host or port",
			ErrRedirect, first.Redacted(), req.URL.Redacted())
	}
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: more than %d redirects from %s", ErrRedirect, maxRedirects, first.Redacted())
	}
	return nil
}

// sameOrigin: one scheme, host and port, the port a scheme's default when it
// is not given.
func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && hostPort(a) == hostPort(b)
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
