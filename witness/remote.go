package witness

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Remote is a witness the node submits its checkpoints to, as
// serve --witness VKEY@URL names it.
type Remote struct {
	VerifierKey string // cosignature/v1 verifier key
	URL         string // base URL; the node posts to URL/add-checkpoint
	verifier    note.Verifier
}

// ParseRemote parses VKEY@URL. The verifier key's base64 holds no @, so the
// URL starts at the first @ after the key's second +.
func ParseRemote(s string) (Remote, error) {
	plus := strings.Index(s, "+")
	if plus >= 0 {
		if p := strings.Index(s[plus+1:], "+"); p >= 0 {
			plus += 1 + p
		}
	}
	at := strings.Index(s[max(plus, 0):], "@")
	if plus < 0 || at < 0 {
		return Remote{}, fmt.Errorf("witness %q is not VKEY@URL", s)
	}
	vkey, base := s[:plus+at], s[plus+at+1:]
	v, err := NewCosignatureVerifier(vkey)
	if err != nil {
		return Remote{}, fmt.Errorf("witness %q: %w", s, err)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Remote{}, fmt.Errorf("witness %q: the URL is not an http or https URL", s)
	}
	return Remote{VerifierKey: vkey, URL: strings.TrimSuffix(base, "/"), verifier: v}, nil
}

// Name is the witness key's name.
func (r Remote) Name() string { return r.verifier.Name() }

// displayURL is the URL without credentials, for status lines and logs.
func (r Remote) displayURL() string {
	u, err := url.Parse(r.URL)
	if err != nil {
		return ""
	}
	u.User = nil
	return u.String()
}
