package sameorigin

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

var errRefused = errors.New("redirect refused")

func TestRedirects(t *testing.T) {
	check := Redirects(3, errRefused)
	req := func(s string) *http.Request {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return &http.Request{URL: u}
	}
	first := req("http://user:secret@Example.org/a")
	for _, c := range []struct {
		to   string
		hops int
		ok   bool
	}{
		{"http://example.org:80/b", 1, true},
		{"http://EXAMPLE.org/b", 3, true},
		{"http://example.org/b", 4, false},
		{"https://example.org/b", 1, false},
		{"http://example.org:8080/b", 1, false},
		{"http://example.net/b", 1, false},
	} {
		via := make([]*http.Request, c.hops)
		for i := range via {
			via[i] = first
		}
		err := check(req(c.to), via)
		if c.ok != (err == nil) {
			t.Errorf("%s after %d: %v, want ok %v", c.to, c.hops, err, c.ok)
		}
		if err != nil && (!errors.Is(err, errRefused) || strings.Contains(err.Error(), "secret")) {
			t.Errorf("%s: %v, want errRefused without the password", c.to, err)
		}
	}
}

// TestSame: scheme, host and port, with the scheme's default port.
func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"http://w.example/x", "http://w.example:80/y", true},
		{"https://w.example/x", "https://W.EXAMPLE:443/y", true},
		{"http://w.example:8080/x", "http://w.example:8080/y?z", true},
		{"http://w.example/x", "https://w.example/x", false},
		{"http://w.example:8080/x", "http://w.example:8081/x", false},
		{"http://w.example/x", "http://other.example/x", false},
		{"http://[::1]:80/x", "http://[::1]/x", true},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := Same(a, b); got != tc.same {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
