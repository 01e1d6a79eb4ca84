package transparency

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects in a row a Client of NewObserverClient
// follows (a CDN that moves a path, adds a slash, or sends a GET to its
// current copy), each within the scheme, host and port it was given.
const maxRedirects = 3

// sameOriginRedirect is the CheckRedirect of NewObserverClient: it follows a
// redirect only to the scheme, host and port of the first request, and at
// most maxRedirects of them. Anywhere else the token would follow, and what
// is read would come from a host the operator did not name; an upgrade from
// http to https is another scheme and port too, so the operator gives the
// https URL instead. Go's client resends the Authorization header only on a
// redirect within the same host, which this rule implies.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if !sameOrigin(first, req.URL) {
		return fmt.Errorf("%w: %s redirected to %s, another scheme, host or port; give the URL the source is served at",
			ErrRedirect, first.Redacted(), req.URL.Redacted())
	}
	if len(via) > maxRedirects {
		return fmt.Errorf("%w: more than %d redirects in a row from %s", ErrRedirect, maxRedirects, first.Redacted())
	}
	return nil
}

// sameOrigin: one scheme, host and port, a missing port being its scheme's
// default.
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
