package sameorigin

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Redirects returns an http.Client CheckRedirect that follows at most max
// redirects in a row, each to the scheme, host and port of the first request.
// A refusal is refused wrapping the reason, which names both URLs without
// their passwords.
func Redirects(max int, refused error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0].URL
		if !Same(first, req.URL) {
			return fmt.Errorf("%w: %s redirected to %s, another scheme, host or port",
				refused, first.Redacted(), req.URL.Redacted())
		}
		if len(via) > max {
			return fmt.Errorf("%w: more than %d redirects in a row from %s", refused, max, first.Redacted())
		}
		return nil
	}
}

// Same reports whether a and b have one scheme, host and port, a missing
// port being its scheme's default and the host compared without case.
func Same(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && hostPort(a) == hostPort(b)
}

func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
