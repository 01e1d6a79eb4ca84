package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/civnode/civnode/commands"
	civhttp "github.com/civnode/civnode/http"
)

// onlineTokens manages tokens through the admin endpoints of the node running on
// the data dir, with the owner token of that data dir. A running node holds the
// database, so this is the only way to reach its token store; it also means the
// node's in-memory view changes at once. It reaches the node through a
// civhttp.Client (localnode.Dial), which sends the token to the node of the data dir only.
type onlineTokens struct {
	ch *civhttp.Client
}

// tokenJSON is a token as the admin endpoints answer it.
type tokenJSON struct {
	TokenID   string  `json:"token_id"`
	Token     string  `json:"token"` // create and rotate only
	Kind      string  `json:"kind"`
	PublicID  *string `json:"public_id"`
	AgentDID  *string `json:"agent_did"`
	CreatedAt string  `json:"created_at"`
	RotatedAt *string `json:"rotated_at"`
	RevokedAt *string `json:"revoked_at"`
}

func (j tokenJSON) token() (commands.Token, error) {
	t := commands.Token{ID: j.TokenID, PublicID: deref(j.PublicID), AgentDID: deref(j.AgentDID)}
	switch j.Kind {
	case commands.TokenKindAgent:
		t.Kind = commands.ActorAgent
	case commands.TokenKindObserver:
		t.Kind = commands.ActorObserver
	default:
		return t, fmt.Errorf("token %s has unknown kind %q", j.TokenID, j.Kind)
	}
	var err error
	for _, f := range []struct {
		dst *time.Time
		src *string
	}{{&t.CreatedAt, &j.CreatedAt}, {&t.RotatedAt, j.RotatedAt}, {&t.RevokedAt, j.RevokedAt}} {
		if f.src == nil {
			continue
		}
		if *f.dst, err = time.Parse(time.RFC3339Nano, *f.src); err != nil {
			return t, fmt.Errorf("token %s: %w", j.TokenID, err)
		}
	}
	return t, nil
}

func (j tokenJSON) issued() (commands.IssuedToken, error) {
	t, err := j.token()
	if err != nil {
		return commands.IssuedToken{}, err
	}
	if j.Token == "" {
		return commands.IssuedToken{}, errors.New("the node's answer holds no token secret")
	}
	return commands.IssuedToken{Token: t, Secret: j.Token}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (o *onlineTokens) Create(ctx context.Context, kind, publicID string) (commands.IssuedToken, error) {
	var out tokenJSON
	body := map[string]string{"kind": kind}
	if publicID != "" {
		body["acts_for"] = publicID
	}
	if err := o.call(ctx, http.MethodPost, "/v1/admin/tokens", body, &out); err != nil {
		return commands.IssuedToken{}, err
	}
	return out.issued()
}

func (o *onlineTokens) Rotate(ctx context.Context, id string) (commands.IssuedToken, error) {
	var out tokenJSON
	if err := o.call(ctx, http.MethodPost, "/v1/admin/tokens/"+url.PathEscape(id)+"/rotate", struct{}{}, &out); err != nil {
		return commands.IssuedToken{}, err
	}
	return out.issued()
}

func (o *onlineTokens) Revoke(ctx context.Context, id string) (commands.Token, error) {
	var out tokenJSON
	if err := o.call(ctx, http.MethodPost, "/v1/admin/tokens/"+url.PathEscape(id)+"/revoke", struct{}{}, &out); err != nil {
		return commands.Token{}, err
	}
	return out.token()
}

func (o *onlineTokens) List(ctx context.Context) ([]commands.Token, error) {
	var out struct {
		Tokens []tokenJSON `json:"tokens"`
	}
	if err := o.call(ctx, http.MethodGet, "/v1/admin/tokens", nil, &out); err != nil {
		return nil, err
	}
	tokens := make([]commands.Token, 0, len(out.Tokens))
	for _, j := range out.Tokens {
		t, err := j.token()
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// call sends one admin request through the node channel (civhttp.Client.Call).
func (o *onlineTokens) call(ctx context.Context, method, path string, in, out any) error {
	return o.ch.Call(ctx, method, path, in, out)
}
