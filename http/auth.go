package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/time/rate"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// Tokens is the service behind agent and observer tokens (docs/tokens.md);
// *commands.Tokens satisfies it. Authenticate serves every request; the rest serve
// the admin endpoints (admin.go). It mirrors the service one to one, which is why
// it is wider than our usual interface.
type Tokens interface {
	Authenticate(secret string) (commands.Actor, bool)
	Create(ctx context.Context, actor commands.Actor, kind, publicID string) (commands.IssuedToken, error)
	Rotate(ctx context.Context, actor commands.Actor, id string) (commands.IssuedToken, error)
	Revoke(ctx context.Context, actor commands.Actor, id string) (commands.Token, error)
	List(actor commands.Actor) ([]commands.Token, error)
}

// ownerTokenID names the owner token in audit entries ("token:owner").
const ownerTokenID = "owner"

type actorKey struct{}

func withActor(ctx context.Context, a commands.Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// authenticatedActor returns the actor of the request's token; ok is false on
// public routes.
func authenticatedActor(ctx context.Context) (commands.Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(commands.Actor)
	return a, ok
}

// requestActor returns who the request acts as. On a public route it is the zero
// Actor, whose Kind matches no rule, so a command refuses it.
func requestActor(ctx context.Context) commands.Actor {
	a, _ := authenticatedActor(ctx)
	return a
}

// auditActor is the audit actor of requests made as a (docs/api.md). It names the
// token by id, never by its secret.
func auditActor(a commands.Actor) string { return "token:" + a.TokenID }

// Failed authentications are audited at most once a second, with a small burst, so
// that a client hammering the API with bad tokens cannot grow the audit log (or
// spend an fsync per request).
const (
	authAuditRate  = rate.Limit(1)
	authAuditBurst = 5
	// anonymousActor is the audit actor of a request without a valid token.
	anonymousActor = "anonymous"
)

// authenticator maps bearer tokens to actors: the owner token itself, every other
// token through the token service.
type authenticator struct {
	// owner is the owner token's SHA-256 digest rather than the token: digests have
	// one length, so a constant-time comparison leaks neither content nor length,
	// and the secret is not kept in memory longer than needed.
	owner    [sha256.Size]byte
	hasOwner bool
	governs  []string
	tokens   Tokens // nil: only the owner token works
	log      *eventlog.Log
	logger   *slog.Logger
	limiter  *rate.Limiter
	// proxies names the client behind a trusted proxy in the audit entry.
	proxies proxyTrust
}

func newAuthenticator(ownerToken string, governs []string, tokens Tokens, log *eventlog.Log, logger *slog.Logger, limiter *rate.Limiter) *authenticator {
	a := &authenticator{governs: slices.Clip(slices.Clone(governs)), tokens: tokens, log: log, logger: logger, limiter: limiter}
	if ownerToken != "" { // an empty token must never match an empty header
		a.owner, a.hasOwner = sha256.Sum256([]byte(ownerToken)), true
	}
	return a
}

// authenticate returns the actor of the request's bearer token.
func (a *authenticator) authenticate(r *http.Request) (commands.Actor, bool) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return commands.Actor{}, false
	}
	digest := sha256.Sum256([]byte(token))
	if a.hasOwner && subtle.ConstantTimeCompare(digest[:], a.owner[:]) == 1 {
		return commands.Actor{TokenID: ownerTokenID, Kind: commands.ActorOwner, Governs: a.governs}, true
	}
	if a.tokens == nil {
		return commands.Actor{}, false
	}
	return a.tokens.Authenticate(token)
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

// requireAuth admits requests with a known bearer token whose kind the route
// admits (flags), answers unknown tokens 401 and the wrong kind 403, and
// requests from an address over its limit of failed authentications 429.
func (s *Server) requireAuth(next httprouter.Handle, flags routeFlags) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if len(r.Header.Values("Authorization")) > 1 {
			// Which one counts would differ between this node and a proxy in front
			// of it; neither guess is safe.
			s.writeError(w, r, errTwoAuthorizations)
			return
		}
		// An address that keeps failing is refused before its token is even
		// looked at, so guessing gets no faster by sending faster.
		if s.refuseFailingAddress(w, r) {
			return
		}
		actor, ok := s.auth.authenticate(r)
		if !ok {
			s.noteAuthFailure(r)
			s.auth.recordFailure(r)
			w.Header().Set("WWW-Authenticate", `Bearer realm="civnode"`)
			s.writeError(w, r, errUnauthorized)
			return
		}
		if err := admitKind(actor, flags); err != nil {
			s.writeError(w, r, err)
			return
		}
		next(w, r.WithContext(withActor(r.Context(), actor)), ps)
	}
}

// admitKind is the route-level half of authorisation, decided by the route table
// alone: owner-only routes, and the few routes an observer may read. Which
// identities an agent may act for is the commands' half.
func admitKind(a commands.Actor, flags routeFlags) error {
	switch a.Kind {
	case commands.ActorOwner:
		return nil
	case commands.ActorAgent:
		if flags&routeOwner != 0 {
			return commands.Forbidden("forbidden", "this endpoint is for the owner token only")
		}
		if flags&routeNoAgent != 0 {
			return commands.Forbidden("forbidden", "this endpoint is for the owner and observer tokens")
		}
		return nil
	case commands.ActorObserver:
		if flags&routeObserver == 0 {
			return commands.Forbidden("forbidden", "an observer token may only read the event log, its export, the stream and health")
		}
		return nil
	}
	return commands.Forbidden("forbidden", "this token may not use the API")
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
	detail := authFailedDetail{Path: r.URL.Path, Remote: a.proxies.clientAddr(r)}
	if _, err := a.log.Audit(r.Context(), "auth.failed", anonymousActor, detail); err != nil {
		a.logger.Warn("audit auth.failed", logkey.Err, err)
	}
}
