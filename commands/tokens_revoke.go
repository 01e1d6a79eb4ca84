package commands

import "context"

// Revoke stops token id from working, as soon as the change is durable and before
// Revoke returns. The token stays listed with its revoked_at. Revoking a revoked
// token changes nothing, audits nothing and returns the record as it is, so a
// retried revoke is safe.
func (t *Tokens) Revoke(ctx context.Context, actor Actor, id string) (Token, error) {
	if err := requireTokenOwner(actor, "revoke tokens"); err != nil {
		return Token{}, err
	}
	t.write.Lock()
	defer t.write.Unlock()
	rec, err := t.lookup(id)
	if err != nil {
		return Token{}, err
	}
	if rec.RevokedAt != nil {
		return rec.token(), nil
	}
	rec.RevokedAt = tokenString(t.stamp())
	if err := t.audit(ctx, "token.revoked", actor, &rec); err != nil {
		return Token{}, err
	}
	if err := t.save(&rec); err != nil {
		return Token{}, err
	}
	return rec.token(), nil
}
