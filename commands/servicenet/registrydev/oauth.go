package registrydev

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The OAuth 2 authorization server of the calendar agent (RFC 6749 code and
// refresh grants, RFC 7636 PKCE with S256 only). It approves every request
// at once: the stand-in has no users to ask.

// Lifetimes of what the server issues.
const (
	codeTTL   = 10 * time.Minute
	accessTTL = time.Hour
)

type authServer struct {
	now func() time.Time

	mu      sync.Mutex
	codes   map[string]grant
	access  map[string]time.Time // token → expiry
	refresh map[string]string    // token → client_id
}

// grant is an authorization code's request.
type grant struct {
	clientID, redirectURI, challenge, scope string
	expires                                 time.Time
}

func newAuthServer(now func() time.Time) *authServer {
	return &authServer{now: now, codes: map[string]grant{}, access: map[string]time.Time{}, refresh: map[string]string{}}
}

// authorize answers GET /oauth/authorize: a redirect to redirect_uri with a
// code and the state, or 400 when the request is not one it can approve.
func (o *authServer) authorize(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("response_type") != "code":
		writeJSON(w, http.StatusBadRequest, oauthError("unsupported_response_type", "response_type must be code"))
		return
	case q.Get("client_id") == "":
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "client_id is required"))
		return
	case err != nil || (redirect.Scheme != "http" && redirect.Scheme != "https") || redirect.Host == "":
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "redirect_uri must be an absolute http(s) URL"))
		return
	case q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "PKCE is required: code_challenge (43 characters) and code_challenge_method=S256"))
		return
	}
	code := randomToken("code_")
	o.mu.Lock()
	o.codes[code] = grant{clientID: q.Get("client_id"), redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		scope: q.Get("scope"), expires: o.now().Add(codeTTL)}
	o.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, req, redirect.String(), http.StatusFound)
}

// token answers POST /oauth/token (application/x-www-form-urlencoded).
func (o *authServer) token(w http.ResponseWriter, req *http.Request) {
	req.Body = http.MaxBytesReader(w, req.Body, maxBody)
	if err := req.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "the body must be a form"))
		return
	}
	f := req.PostForm
	w.Header().Set("Cache-Control", "no-store")
	switch f.Get("grant_type") {
	case "authorization_code":
		o.mu.Lock()
		g, ok := o.codes[f.Get("code")]
		delete(o.codes, f.Get("code")) // good once, whatever the outcome
		o.mu.Unlock()
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		challenge := base64.RawURLEncoding.EncodeToString(sum[:])
		switch {
		case !ok || o.now().After(g.expires):
			writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "the code is unknown, used or expired"))
		case g.clientID != f.Get("client_id") || g.redirectURI != f.Get("redirect_uri"):
			writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "client_id or redirect_uri is not the authorization request's"))
		case subtle.ConstantTimeCompare([]byte(challenge), []byte(g.challenge)) != 1:
			writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "code_verifier does not match the code_challenge"))
		default:
			o.issue(w, g.clientID, g.scope)
		}
	case "refresh_token":
		o.mu.Lock()
		client, ok := o.refresh[f.Get("refresh_token")]
		o.mu.Unlock()
		if !ok || client != f.Get("client_id") {
			writeJSON(w, http.StatusBadRequest, oauthError("invalid_grant", "the refresh token is unknown, or another client's"))
			return
		}
		o.issue(w, client, "")
	default:
		writeJSON(w, http.StatusBadRequest, oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token"))
	}
}

// issue answers a new access token, and a refresh token for a code grant.
func (o *authServer) issue(w http.ResponseWriter, clientID, scope string) {
	access := randomToken("dev_at_")
	out := map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(accessTTL.Seconds())}
	o.mu.Lock()
	o.access[access] = o.now().Add(accessTTL)
	if scope != "" {
		refresh := randomToken("dev_rt_")
		o.refresh[refresh] = clientID
		out["refresh_token"], out["scope"] = refresh, scope
	}
	o.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// valid reports whether token is an access token issued and not expired.
func (o *authServer) valid(token string) bool {
	if !strings.HasPrefix(token, "dev_at_") {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	exp, ok := o.access[token]
	return ok && o.now().Before(exp)
}

func oauthError(code, description string) map[string]string {
	return map[string]string{"error": code, "error_description": description}
}

// randomToken is prefix and 32 random bytes, base64url.
func randomToken(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}
