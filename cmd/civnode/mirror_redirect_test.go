package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// redirector answers every request with a redirect of code to to(r): the
// URL the request is sent on to.
func redirector(code int, to func(r *http.Request) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to(r), code)
	})
}

// TestMirrorRedirects: civnode mirror follows a redirect to the scheme, host
// and port it was given, up to three in a row, whatever the code (a CDN that
// moved the directory); it refuses a fourth, and a redirect to another host
// or port or to https, with exit status 1, storing nothing, keeping no
// evidence (nothing was served) and sending nothing, its token least of all,
// where the redirect pointed.
func TestMirrorRedirects(t *testing.T) {
	origin := trStoppedNode(t, 300)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", origin)

	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the token went to another host: %s %s", r.Method, r.URL)
		}
		http.FileServer(http.Dir(pub)).ServeHTTP(w, r)
	}))
	defer other.Close()

	mux := http.NewServeMux()
	var host *httptest.Server
	mux.Handle("/v3/", http.StripPrefix("/v3", http.FileServer(http.Dir(pub))))
	hop := func(from, to string, code int) {
		mux.Handle(from+"/", redirector(code, func(r *http.Request) string { return to + strings.TrimPrefix(r.URL.Path, from) }))
	}
	hop("/v2", "/v3", http.StatusFound)
	hop("/v1", "/v2", http.StatusMovedPermanently)
	hop("/v0", "/v1", http.StatusTemporaryRedirect)
	hop("/old", "/v0", http.StatusPermanentRedirect)
	mux.Handle("/away/", redirector(http.StatusFound, func(r *http.Request) string {
		return other.URL + strings.TrimPrefix(r.URL.Path, "/away")
	}))
	mux.Handle("/tls/", redirector(http.StatusMovedPermanently, func(r *http.Request) string {
		return "https://" + r.Host + strings.TrimPrefix(r.URL.Path, "/tls")
	}))
	host = httptest.NewServer(mux)
	defer host.Close()

	for _, c := range []struct{ name, path string }{{"one", "/v2"}, {"three in a row", "/v0"}} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "mirror")
			out, errOut, code := mrMirror(t, host.URL+c.path, data)
			if code != 0 || !strings.Contains(out, "300 events stored") {
				t.Fatalf("mirror through redirects on the same host: exit %d, %q %q", code, out, errOut)
			}
			requireSameChain(t, origin, data, 300)
		})
	}
	for _, c := range []struct{ name, path, says string }{
		{"four in a row", "/old", "redirect refused: more than 3 redirects in a row from " + host.URL + "/old/"},
		{"another port", "/away", "redirect refused: " + host.URL + "/away/seal redirected to " + other.URL + "/seal, another scheme, host or port"},
		{"to https", "/tls", "redirected to https://" + strings.TrimPrefix(host.URL, "http://") + "/seal, another scheme, host or port"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "mirror")
			out, errOut, code := mrMirror(t, host.URL+c.path, data, "--verifier-key", mrVerifierKey(t, origin))
			if code != 1 || !strings.Contains(errOut, c.says) {
				t.Fatalf("mirror through a refused redirect: exit %d, %q %q; want 1 naming %q", code, out, errOut, c.says)
			}
			if files, _ := filepath.Glob(filepath.Join(data, "mirror.evidence-*")); len(files) != 0 {
				t.Fatalf("evidence of a redirect: %v", files)
			}
			if _, err := os.Stat(filepath.Join(data, "db")); err == nil {
				if n := len(mrChain(t, filepath.Join(data, "db"), mrPublicKey(t, origin))); n != 0 {
					t.Fatalf("the mirror stored %d events", n)
				}
			}
		})
	}

	// A node's API behind a redirect to another port: the token stays.
	data := filepath.Join(t.TempDir(), "mirror")
	_, errOut, code := mrMirror(t, host.URL+"/away", data, "--token", "an-observer-token")
	if code != 1 || !strings.Contains(errOut, "redirect refused") {
		t.Fatalf("mirror of an API through a redirect to another port: exit %d, %q", code, errOut)
	}
	// Following, a refused redirect is not a failure to wait out: it stops.
	_, errOut, code = trRun(t, nil, "mirror", "--from", host.URL+"/away", "--data-dir", filepath.Join(t.TempDir(), "follower"),
		"--interval", "100ms", "--verifier-key", mrVerifierKey(t, origin))
	if code != 1 || !strings.Contains(errOut, "redirect refused") || strings.Contains(errOut, "retrying") {
		t.Fatalf("a follower through a redirect to another port: exit %d, %q; want 1 at once", code, errOut)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the host the redirects pointed to was sent %d requests", n)
	}
}

func mrVerifierKey(t *testing.T, dir string) string {
	t.Helper()
	_, vkey := mrOriginKey(t, dir)
	return vkey
}

func mrPublicKey(t *testing.T, dir string) []byte {
	t.Helper()
	pub, _ := mrOriginKey(t, dir)
	return pub
}
