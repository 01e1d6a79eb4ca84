package http

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
)

// The identity and civilization endpoints (docs/api.md).
// Writes go through commands.Identity, which appends before it returns, and their
// answers are read back from the read model, which OnCommit has already updated:
// a 200 is durable and every later read sees it. Who may act for whom is decided by
// the commands (commands/authorize.go); the route table keeps observers out and
// the owner-only routes to the owner.

// Bounds of the identities list.
const defaultIdentityLimit = 50

// bootstrapResponse is POST /v1/civilization/bootstrap-identity.
type bootstrapResponse struct {
	AgentDID string `json:"agent_did"`
	PublicID string `json:"public_id"`
	// ControllerBinding is null unless the identity has a binding, which a fresh
	// identity never has.
	ControllerBinding *projections.BindingRecord `json:"controller_binding"`
}

func (s *Server) handleBootstrapIdentity(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	actor := requestActor(r.Context())
	if err := commands.RequireOwner(actor); err != nil {
		return err
	}
	var in commands.BootstrapInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := s.identity.Bootstrap(r.Context(), actor, in)
	if err != nil {
		return err
	}
	resp := bootstrapResponse{AgentDID: res.AgentDID, PublicID: res.PublicID}
	b, _, ok, err := s.identities.Binding(res.AgentDID)
	if err != nil {
		return err
	}
	if ok {
		resp.ControllerBinding = &b
	}
	return writeJSON(w, resp)
}

// identitiesResponse is GET /v1/civilization/identities.
type identitiesResponse struct {
	Identities []projections.IdentityRecord `json:"identities"`
	NextCursor *string                      `json:"next_cursor"` // null on the last page
}

func (s *Server) handleIdentities(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	limit, cursor, err := pageQuery(r.URL.Query(), defaultIdentityLimit)
	if err != nil {
		return err
	}
	ids, next, err := s.identities.List(projections.Page{Cursor: cursor, Limit: limit, Bytes: s.itemBytes(r.Context())})
	if err != nil {
		return cursorError(err)
	}
	return writeJSON(w, identitiesResponse{Identities: ids, NextCursor: nullable(next)})
}

func (s *Server) handleGetPublicIdentity(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	rec, err := s.identityFromQuery(r.URL.Query())
	if err != nil {
		return err
	}
	return writeJSON(w, rec)
}

func (s *Server) handlePostPublicIdentity(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in commands.PublicIdentityInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	if _, err := s.identity.UpdatePublicIdentity(r.Context(), requestActor(r.Context()), in); err != nil {
		return err
	}
	rec, ok, err := s.identities.Record(in.AgentDID)
	if err != nil {
		return err
	}
	if !ok {
		return errNotInReadModel("public identity", in.AgentDID)
	}
	return writeJSON(w, rec)
}

// identityFromQuery resolves ?agent_did= xor ?public_id= to an identity record.
// Both or neither is 400; an unknown one 404 identity_not_found naming it.
func (s *Server) identityFromQuery(q url.Values) (projections.IdentityRecord, error) {
	did, err := queryValue(q, "agent_did")
	if err != nil {
		return projections.IdentityRecord{}, err
	}
	slug, err := queryValue(q, "public_id")
	if err != nil {
		return projections.IdentityRecord{}, err
	}
	switch {
	case did == "" && slug == "":
		return projections.IdentityRecord{}, &commands.Error{Kind: commands.KindInvalid, Code: "missing_field",
			Message: "give agent_did or public_id"}
	case did != "" && slug != "":
		return projections.IdentityRecord{}, &commands.Error{Kind: commands.KindInvalid, Code: "invalid_field",
			Message: "give agent_did or public_id, not both"}
	case did != "":
		if _, err := eventlog.PublicKeyFromDID(did); err != nil {
			return projections.IdentityRecord{}, commands.Invalid("agent_did", "agent_did must be an Ed25519 did:key")
		}
		if rec, ok, err := s.identities.Record(did); err != nil || ok {
			return rec, err
		}
		return projections.IdentityRecord{}, commands.NotFound("identity_not_found", "agent_did", "no identity has agent_did %s", did)
	default:
		if !commands.ValidPublicID(slug) {
			return projections.IdentityRecord{}, errPublicIDForm
		}
		if rec, ok, err := s.identities.RecordBySlug(slug); err != nil || ok {
			return rec, err
		}
		return projections.IdentityRecord{}, commands.NotFound("identity_not_found", "public_id", "no identity has public_id %s", slug)
	}
}

// errPublicIDForm answers a public_id in a query that no identity could have:
// a malformed value is bad input (400), not an unknown identity (404).
var errPublicIDForm = commands.Invalid("public_id", "public_id must be 3 to 40 characters of a-z, 0-9 and -")

// queryPublicID reads the required public_id query value.
func queryPublicID(q url.Values) (string, error) {
	slug, err := queryValue(q, "public_id")
	switch {
	case err != nil:
		return "", err
	case slug == "":
		return "", commands.Missing("public_id")
	case !commands.ValidPublicID(slug):
		return "", errPublicIDForm
	}
	return slug, nil
}

// pageQuery parses limit (1..1000, default def) and cursor.
func pageQuery(q url.Values, def int) (limit int, cursor string, err error) {
	limit = def
	if v, err := queryValue(q, "limit"); err != nil {
		return 0, "", err
	} else if v != "" {
		if limit, err = queryLimit(q); err != nil {
			return 0, "", err
		}
	}
	cursor, err = queryValue(q, "cursor")
	return limit, cursor, err
}

// cursorError turns a projection's paging error into the client's 400.
func cursorError(err error) error {
	if errors.Is(err, projections.ErrBadCursor) {
		return invalidQuery("cursor", "cursor is not one this node handed out; start again without it")
	}
	return err
}

// nullable is null for "" and the string otherwise.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
