package commands

import (
	"context"
	"errors"
	"fmt"

	"github.com/civnode/civnode/eventlog/events"
)

// Create issues a token of kind "agent", acting for the identity publicID, or
// "observer", which acts for no one and may only read the event log. Only the
// owner may issue tokens. The secret is in the result and nowhere else.
func (t *Tokens) Create(ctx context.Context, actor Actor, kind, publicID string) (IssuedToken, error) {
	if err := requireTokenOwner(actor, "issue tokens"); err != nil {
		return IssuedToken{}, err
	}
	rec := &tokenRecord{Kind: kind}
	switch kind {
	case "":
		return IssuedToken{}, Missing("kind")
	case TokenKindAgent:
		if publicID == "" {
			return IssuedToken{}, Missing("acts_for")
		}
		var id events.IdentityRef
		ok := false
		if t.identities != nil {
			var err error
			if id, ok, err = t.identities.IdentityBySlug(publicID); err != nil {
				return IssuedToken{}, fmt.Errorf("resolve acts_for %s: %w", publicID, err)
			}
		}
		if !ok {
			return IssuedToken{}, NotFound("identity_not_found", "acts_for", "no identity with public_id %q", publicID)
		}
		// The token could not act for it (Actor.ActsFor), and a token that
		// looks as if it did would mislead whoever holds it.
		if node, elsewhere := BoundElsewhere(t.nodeDID, id); elsewhere {
			return IssuedToken{}, forbiddenField("acts_for", "%s is controlled from node %s (its active controller "+
				"binding names that node), so this node issues no token for it", publicID, node)
		}
		rec.PublicID, rec.AgentDID = tokenString(publicID), tokenString(id.AgentDID)
	case TokenKindObserver:
		if publicID != "" {
			return IssuedToken{}, Invalid("acts_for", "an observer token acts for no identity")
		}
	default:
		return IssuedToken{}, Invalid("kind", "kind must be %q or %q", TokenKindAgent, TokenKindObserver)
	}

	t.write.Lock()
	defer t.write.Unlock()
	id, err := t.unusedID()
	if err != nil {
		return IssuedToken{}, err
	}
	secret, digest, err := newTokenSecret()
	if err != nil {
		return IssuedToken{}, err
	}
	rec.ID, rec.SHA256, rec.CreatedAt = id, digest, t.stamp()
	if err := t.audit(ctx, "token.created", actor, rec); err != nil {
		return IssuedToken{}, err
	}
	if err := t.save(rec); err != nil {
		return IssuedToken{}, err
	}
	return IssuedToken{Token: rec.token(), Secret: secret}, nil
}

// unusedID draws token ids until one is free. With 48 random bits a collision is
// rare enough that a few draws always suffice.
func (t *Tokens) unusedID() (string, error) {
	for range 8 {
		id, err := newTokenID()
		if err != nil {
			return "", err
		}
		t.mu.RLock()
		_, taken := t.byID[id]
		t.mu.RUnlock()
		if !taken {
			return id, nil
		}
	}
	return "", errors.New("generate token id: no free id after 8 draws")
}
