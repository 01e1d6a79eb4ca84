package admin

import (
	"context"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands"
)

// offlineTokens works on a stopped node's data dir. The CLI acts as the node
// itself: whoever can open the data dir holds the node key, so it is the owner,
// and its audit entries name the node DID.
type offlineTokens struct{ t *commands.Tokens }

func (o offlineTokens) Create(ctx context.Context, kind, publicID string) (commands.IssuedToken, error) {
	return o.t.Create(ctx, localnode.Owner, kind, publicID)
}

func (o offlineTokens) Rotate(ctx context.Context, id string) (commands.IssuedToken, error) {
	return o.t.Rotate(ctx, localnode.Owner, id)
}

func (o offlineTokens) Revoke(ctx context.Context, id string) (commands.Token, error) {
	return o.t.Revoke(ctx, localnode.Owner, id)
}

func (o offlineTokens) List(context.Context) ([]commands.Token, error) {
	return o.t.List(localnode.Owner)
}
