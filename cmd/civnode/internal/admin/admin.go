package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/internal/logkey"
)

// Tokens is what civnode token does, either offline on the data dir or
// through a running node's admin endpoints.
type Tokens interface {
	Create(ctx context.Context, kind, publicID string) (commands.IssuedToken, error)
	Rotate(ctx context.Context, id string) (commands.IssuedToken, error)
	Revoke(ctx context.Context, id string) (commands.Token, error)
	List(ctx context.Context) ([]commands.Token, error)
}

// Wallets is what civnode wallet does, either offline on the data dir or
// through a running node's admin endpoints.
type Wallets interface {
	Create(ctx context.Context, in commands.CreatePaymentAccountInput) (commands.PaymentAccount, error)
	List(ctx context.Context) ([]commands.PaymentAccount, error)
}

// Both ways of working satisfy Tokens and Wallets.
var (
	_ Tokens  = offlineTokens{}
	_ Tokens  = (*onlineTokens)(nil)
	_ Wallets = offlineWallets{}
	_ Wallets = onlineWallets{}
)

// Owner is the owner's way to the node of a data dir, opened by Open.
type Owner struct {
	Tokens  Tokens
	Wallets Wallets
	close   func() error
}

// Close closes the core or the channel Open opened.
func (o *Owner) Close() error { return o.close() }

// Open reaches the node of dir as its owner: through the admin endpoints of
// the node running on it when one runs (it holds the database; localnode.Dial,
// with addr its TCP address), else on the data dir itself, opened offline.
// The caller closes the Owner.
func Open(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger, opts ...localnode.DialOption) (*Owner, error) {
	n, err := localnode.OpenExisting(ctx, dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := localnode.Dial(ctx, dir, addr, logger, opts...)
		if err != nil {
			return nil, err
		}
		logger.Debug("a node runs on the data dir; using its admin endpoints", logkey.Via, ch.Via)
		return &Owner{Tokens: &onlineTokens{ch: ch}, Wallets: onlineWallets{ch},
			close: func() error { ch.Close(); return nil }}, nil
	}
	if err != nil {
		return nil, err
	}
	return &Owner{Tokens: offlineTokens{n.Tokens}, Wallets: offlineWallets{n.PaymentAccounts, n.Log.NodeDID()},
		close: func() error {
			if err := n.Close(); err != nil {
				return fmt.Errorf("close event log: %w", err)
			}
			return nil
		}}, nil
}
