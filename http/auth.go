package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/time/rate"

	"github.com/civnode/civnode/eventlog"
)

// principal is who an authenticated request acts as. Authorisation decisions and
// audit entries use it, never the token itself.
type principal struct {
	// tokenID names the token in audit entries ("token:<id>"); it is not secret.
	tokenID string
	kind    tokenKind
}

// tokenKind is what a token may do. Agent tokens (acting for one identity) and
// observer tokens (read-only) are planned beside the owner token (wire.md §2).
type tokenKind uint8

const (
	// tokenOwner acts for the node, every identity bound on it and the subnets it
	// governs.
	tokenOwner tokenKind = iota + 1
)

// actor is the audit actor of requests made with this token (wire.md §5).
func (p principal) actor() string { return "token:" + p.tokenID }

type principalKey struct{}

func withPrincipal(ctx context.Context, p principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the request's principal; ok is false on public routes.
func principalFrom(ctx context.Context) (principal, bool) {
	p, ok := ctx.Value(principalKey{}).(principal)
	return p, ok
}

// Failed authentications are audited at most once a second, with a small burst, so
// that a client hammering the API with bad tokens cannot grow the audit log (or
// spend an fsync per request).
const (
	authAuditRate  = rate.Limit(1)
	authAuditBurst = 5
	// anonymousActor is the audit actor of a request without a valid token.
	anonymousActor = "anonymous"
)

// authenticator maps bearer tokens to principals.
type authenticator struct {
	tokens  []tokenEntry
	log     *eventlog.Log
	logger  *slog.Logger
	limiter *rate.Limiter
}

// tokenEntry holds a token's SHA-256 digest rather than the token: digests have one
// length, so a constant-time comparison leaks neither content nor length, and the
// secret is not kept in memory longer than needed.
type tokenEntry struct {
	digest [sha256.Size]byte
	who    principal
}

func newAuthenticator(ownerToken string, log *eventlog.Log, logger *slog.Logger, limiter *rate.Limiter) *authenticator {
	a := &authenticator{log: log, logger: logger, limiter: limiter}
	if ownerToken != "" { // an empty token must never match an empty header
		a.tokens = append(a.tokens, tokenEntry{
			digest: sha256.Sum256([]byte(ownerToken)),
			who:    principal{tokenID: "owner", kind: tokenOwner},
		})
	}
	return a
}

// authenticate returns the principal of the request's bearer token.
func (a *authenticator) authenticate(r *http.Request) (principal, bool) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return principal{}, false
	}
	digest := sha256.Sum256([]byte(token))
	var found principal
	match := 0
	// Every entry is compared rather than stopping at the first match, so the time
	// taken does not tell how many tokens a guess got past.
	for _, e := range a.tokens {
		if subtle.ConstantTimeCompare(digest[:], e.digest[:]) == 1 {
			found, match = e.who, 1
		}
	}
	return found, match == 1
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" header. The
// scheme is case-insensitive (RFC 9110 §11.1).
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// requireAuth admits requests with a known bearer token and answers the rest 401.
func (s *Server) requireAuth(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		p, ok := s.auth.authenticate(r)
		if !ok {
			s.auth.recordFailure(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="civnode"`)
			s.writeError(w, r, errUnauthorized)
			return
		}
		next(w, r.WithContext(withPrincipal(r.Context(), p)), ps)
	}
}

// authFailedDetail is the detail of an auth.failed audit entry. It never holds the
// presented token.
type authFailedDetail struct {
	Path   string `json:"path"`
	Remote string `json:"remote"`
}

// recordFailure audits a failed authentication within the rate limit. An audit
// write that fails is logged and does not change the 401.
func (a *authenticator) recordFailure(r *http.Request) {
	if !a.limiter.Allow() {
		return
	}
	detail := authFailedDetail{Path: r.URL.Path, Remote: r.RemoteAddr}
	if _, err := a.log.Audit(r.Context(), "auth.failed", anonymousActor, detail); err != nil {
		a.logger.Warn("audit auth.failed", "err", err)
	}
}
