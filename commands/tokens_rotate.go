package commands

import "context"

// Rotate gives token id a new secret and returns it. The old secret stops working
// as soon as the change is durable, before Rotate returns. A revoked token cannot
// be rotated back to life (409 invalid_state); issue a new one instead.
func (t *Tokens) Rotate(ctx context.Context, actor Actor, id string) (IssuedToken, error) {
	if err := requireTokenOwner(actor, "rotate tokens"); err != nil {
		return IssuedToken{}, err
	}
	t.write.Lock()
	defer t.write.Unlock()
	rec, err := t.lookup(id)
	if err != nil {
		return IssuedToken{}, err
	}
	if rec.RevokedAt != nil {
		return IssuedToken{}, Conflict("invalid_state", "", "token %s is revoked", id)
	}
	secret, digest, err := newTokenSecret()
	if err != nil {
		return IssuedToken{}, err
	}
	rec.SHA256, rec.RotatedAt = digest, tokenString(t.stamp())
	if err := t.audit(ctx, "token.rotated", actor, &rec); err != nil {
		return IssuedToken{}, err
	}
	if err := t.save(&rec); err != nil {
		return IssuedToken{}, err
	}
	return IssuedToken{Token: rec.token(), Secret: secret}, nil
}
