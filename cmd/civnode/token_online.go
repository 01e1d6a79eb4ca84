package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/civnode/civnode/commands"
)

// onlineTokens manages tokens through the admin endpoints of the node running on
// the data dir, with the owner token of that data dir. A running node holds the
// database, so this is the only way to reach its token store; it also means the
// node's in-memory view changes at once. It reaches the node through a
// nodeChannel, which sends the token to the node of the data dir only.
type onlineTokens struct {
	ch *nodeChannel
}

// onlineTimeout bounds one admin request; the node's handler timeout is shorter.
const onlineTimeout = 30 * time.Second

// adminResponseLimit bounds what is read of an answer; a token list is small.
const adminResponseLimit = 16 << 20

// newOnlineTokens opens the channel to the node running on dir; the caller
// closes it.
func newOnlineTokens(ctx context.Context, dir dataDir, addr string, logger *slog.Logger) (*onlineTokens, error) {
	ch, err := openNodeChannel(ctx, dir, addr, logger)
	if err != nil {
		return nil, err
	}
	return &onlineTokens{ch: ch}, nil
}

// Close closes the connections to the node.
func (o *onlineTokens) Close() { o.ch.Close() }

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

// call sends one admin request and decodes a 200 answer into out. A refusal the
// node explains (400, 403, 404, 409) comes back as the same *commands.Error the
// offline path returns, so both print alike.
func (o *onlineTokens) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode admin request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := o.ch.NewRequest(ctx, method, path, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := o.ch.Client.Do(req)
	if err != nil {
		// The error names the URL, never the header that holds the token.
		return fmt.Errorf("admin request to the node at %s: %w", o.ch.Via, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, adminResponseLimit))
	if err != nil {
		return fmt.Errorf("read answer of the node at %s: %w", o.ch.Via, err)
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode answer of the node at %s: %w", o.ch.Via, err)
		}
		return nil
	}
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
		Field string `json:"field"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Code == "" {
		return fmt.Errorf("the node at %s answered %s %s with %s", o.ch.Via, method, path, resp.Status)
	}
	kind, explained := map[int]commands.Kind{
		http.StatusBadRequest: commands.KindInvalid,
		http.StatusForbidden:  commands.KindForbidden,
		http.StatusNotFound:   commands.KindNotFound,
		http.StatusConflict:   commands.KindConflict,
	}[resp.StatusCode]
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// The node proved it is the data dir's own, so the file and the token
		// the node holds differ.
		return fmt.Errorf("the node at %s refused the owner token in control.token; was the file changed after the node started? Restart the node to use it", o.ch.Via)
	case resp.StatusCode == http.StatusNotFound && e.Code == "not_found":
		return fmt.Errorf("the node at %s has no admin endpoints (%s)", o.ch.Via, e.Error)
	case explained:
		return &commands.Error{Kind: kind, Code: e.Code, Field: e.Field, Message: e.Error}
	}
	return fmt.Errorf("the node at %s answered %s: %s (%s)", o.ch.Via, resp.Status, e.Error, e.Code)
}
