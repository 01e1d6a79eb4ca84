package localnode

import (
	"crypto/sha256"
	"crypto/subtle"
	"sync/atomic"

	"github.com/civnode/civnode/commands"
)

// natsTokens is the NATS port's token check (stream.Options.Authenticate):
// the tokens HTTP takes as a bearer token, the owner token first, then the
// token service, which exists only once the core is open; until then only
// the owner token gets in.
type natsTokens struct {
	// owner is the owner token's digest, compared in constant time as HTTP
	// does; "" never matches.
	owner    [sha256.Size]byte
	hasOwner bool
	service  atomic.Pointer[commands.Tokens]
}

func newNATSTokens(ownerToken string) *natsTokens {
	t := &natsTokens{}
	if ownerToken != "" {
		t.owner, t.hasOwner = sha256.Sum256([]byte(ownerToken)), true
	}
	return t
}

// check returns the token's id for the logs; it never logs the token.
func (t *natsTokens) check(secret string) (string, bool) {
	if secret == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(secret))
	if t.hasOwner && subtle.ConstantTimeCompare(d[:], t.owner[:]) == 1 {
		return "owner", true
	}
	s := t.service.Load()
	if s == nil {
		return "", false
	}
	a, ok := s.Authenticate(secret)
	return a.TokenID, ok
}
