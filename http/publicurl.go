package http

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ParsePublicURL checks a node's public URL (Options.PublicURL): an absolute
// http or https URL with a host and nothing past its path, the address clients
// use when the node sits behind a proxy or a name of its own.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, err
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("the public URL must start with http:// or https://")
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("the public URL names no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, errors.New("the public URL may not carry user information, a query or a fragment")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// hostPort is a Host (or URL host) in one form for comparison: the host in
// lower case and the port, the scheme's default when none is written.
func hostPort(host, scheme string) string {
	h, port, err := net.SplitHostPort(host)
	if err != nil {
		h, port = strings.Trim(host, "[]"), ""
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return net.JoinHostPort(strings.ToLower(h), port)
}

// isLoopbackHost reports whether a Host names this machine: localhost or a
// loopback address, with or without a port.
func isLoopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = strings.Trim(host, "[]")
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}

// isPublicHost reports whether host (a Host header or an origin's host) is the
// public URL's.
func (s *Server) isPublicHost(host, scheme string) bool {
	return s.publicURL != nil && hostPort(host, scheme) == hostPort(s.publicURL.Host, s.publicURL.Scheme)
}

// mcpHostRefusal guards POST /mcp against DNS rebinding, where a web page
// makes a browser post to a node on its own machine under another name: on a
// loopback address the Host must be loopback or the public URL's (a proxy on
// the same host passes its clients' Host on), and an Origin, when a browser
// sends one, must be loopback, the public URL's or the Host itself.
func (s *Server) mcpHostRefusal(r *http.Request) error {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		if isLoopbackHost(local.String()) && !isLoopbackHost(r.Host) && !s.isPublicHost(r.Host, s.publicScheme()) {
			return &Error{Status: http.StatusForbidden, Code: codeForbidden,
				Message: "Forbidden: invalid Host header " + strconvQuote(r.Host) + "; a node behind a proxy names its public host with --public-url"}
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	o, err := url.Parse(origin)
	if err == nil && o.Host != "" && (isLoopbackHost(o.Host) || s.isPublicHost(o.Host, o.Scheme) && (s.publicURL.Scheme == o.Scheme) ||
		hostPort(o.Host, o.Scheme) == hostPort(r.Host, o.Scheme)) {
		return nil
	}
	return &Error{Status: http.StatusForbidden, Code: codeForbidden, Field: "Origin",
		Message: "Forbidden: the Origin " + strconvQuote(origin) + " is neither this node's nor loopback"}
}

// publicScheme is the public URL's scheme, "http" without one.
func (s *Server) publicScheme() string {
	if s.publicURL == nil {
		return "http"
	}
	return s.publicURL.Scheme
}

// strconvQuote quotes a client's text for an error message, bounded.
func strconvQuote(v string) string {
	if len(v) > 256 {
		v = v[:256]
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// openAPIWithServer is the OpenAPI document with public as its only server,
// and its ETag: a client of a node behind a proxy generates code against the
// address it reaches. The rest of the document is the embedded one, byte for
// byte.
func openAPIWithServer(doc []byte, public *url.URL) ([]byte, string, error) {
	const open, closing = "\n  \"servers\": [", "\n  ],"
	start := bytes.Index(doc, []byte(open))
	if start < 0 {
		return nil, "", errors.New("the OpenAPI document has no servers list")
	}
	end := bytes.Index(doc[start:], []byte(closing))
	if end < 0 {
		return nil, "", errors.New("the OpenAPI document's servers list does not end")
	}
	end += start + len(closing)
	servers, err := json.MarshalIndent([]map[string]string{{
		"url": public.String(), "description": "This node's public URL (`civnode serve --public-url`).",
	}}, "  ", "  ")
	if err != nil {
		return nil, "", err
	}
	var out bytes.Buffer
	out.Write(doc[:start])
	out.WriteString("\n  \"servers\": ")
	out.Write(servers)
	out.WriteString(",")
	out.Write(doc[end:])
	sum := sha256.Sum256(out.Bytes())
	return out.Bytes(), `"` + hex.EncodeToString(sum[:16]) + `"`, nil
}

// setPublicURL sets the public URL and the OpenAPI document that names it.
func (s *Server) setPublicURL(raw string) error {
	u, err := ParsePublicURL(raw)
	if err != nil {
		return err
	}
	doc, tag, err := openAPIWithServer(openAPIDocument, u)
	if err != nil {
		return err
	}
	s.publicURL, s.openAPIDoc, s.openAPITag = u, doc, tag
	return nil
}
