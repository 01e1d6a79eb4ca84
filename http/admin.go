package http

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
)

// The admin endpoints manage agent and observer tokens (beyond the spec; see
// docs/tokens.md). They are for the owner token only, and the create and rotate
// answers are the only responses of the API that ever carry a token secret. Token
// actions write audit entries, never events.

// adminRoutes registers the admin endpoints. Without a token service there is
// nothing to administer and the paths stay 404.
func (s *Server) adminRoutes() {
	if s.tokens == nil {
		return
	}
	s.handle(http.MethodPost, "/v1/admin/tokens", s.handleCreateToken, routeOwner)
	s.handle(http.MethodGet, "/v1/admin/tokens", s.handleListTokens, routeOwner)
	s.handle(http.MethodPost, "/v1/admin/tokens/:token_id/rotate", s.handleRotateToken, routeOwner)
	s.handle(http.MethodPost, "/v1/admin/tokens/:token_id/revoke", s.handleRevokeToken, routeOwner)
}

// createTokenRequest is POST /v1/admin/tokens: {"kind":"agent","acts_for":"<public_id>"}
// or {"kind":"observer"}.
type createTokenRequest struct {
	Kind    string `json:"kind"`
	ActsFor string `json:"acts_for"`
}

// emptyRequest is the {} body of rotate and revoke; any field in it is unknown.
type emptyRequest struct{}

// tokenView is a token as the API shows it: no secret and no digest. Fields that
// do not apply or are not set yet are null.
type tokenView struct {
	TokenID   string  `json:"token_id"`
	Kind      string  `json:"kind"`
	PublicID  *string `json:"public_id"`
	AgentDID  *string `json:"agent_did"`
	CreatedAt string  `json:"created_at"`
	RotatedAt *string `json:"rotated_at"`
	RevokedAt *string `json:"revoked_at"`
}

// issuedTokenView is the answer to create and rotate: the token with its secret,
// shown this once.
type issuedTokenView struct {
	TokenID string `json:"token_id"`
	Token   string `json:"token"`
	tokenView
}

type tokenListResponse struct {
	Tokens []tokenView `json:"tokens"`
}

func viewToken(t commands.Token) tokenView {
	return tokenView{
		TokenID:   t.ID,
		Kind:      t.Kind.String(),
		PublicID:  nullString(t.PublicID),
		AgentDID:  nullString(t.AgentDID),
		CreatedAt: formatTime(t.CreatedAt),
		RotatedAt: nullTime(t.RotatedAt),
		RevokedAt: nullTime(t.RevokedAt),
	}
}

func viewIssued(it commands.IssuedToken) issuedTokenView {
	return issuedTokenView{TokenID: it.ID, Token: it.Secret, tokenView: viewToken(it.Token)}
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func formatTime(t time.Time) string { return t.UTC().Format(eventlog.TimeLayout) }

func nullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := formatTime(t)
	return &s
}

// handleCreateToken answers POST /v1/admin/tokens.
func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req createTokenRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	issued, err := s.tokens.Create(r.Context(), requestActor(r.Context()), req.Kind, req.ActsFor)
	if err != nil {
		return err
	}
	return writeJSON(w, viewIssued(issued))
}

// handleListTokens answers GET /v1/admin/tokens with every token, revoked ones
// included, oldest first.
func (s *Server) handleListTokens(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	tokens, err := s.tokens.List(requestActor(r.Context()))
	if err != nil {
		return err
	}
	views := make([]tokenView, 0, len(tokens))
	for _, t := range tokens {
		views = append(views, viewToken(t))
	}
	return writeJSON(w, tokenListResponse{Tokens: views})
}

// handleRotateToken answers POST /v1/admin/tokens/{token_id}/rotate {}.
func (s *Server) handleRotateToken(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := s.decodeJSON(w, r, &emptyRequest{}); err != nil {
		return err
	}
	issued, err := s.tokens.Rotate(r.Context(), requestActor(r.Context()), ps.ByName("token_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, viewIssued(issued))
}

// handleRevokeToken answers POST /v1/admin/tokens/{token_id}/revoke {}.
func (s *Server) handleRevokeToken(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	if err := s.decodeJSON(w, r, &emptyRequest{}); err != nil {
		return err
	}
	t, err := s.tokens.Revoke(r.Context(), requestActor(r.Context()), ps.ByName("token_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, viewToken(t))
}
