package admin

import (
	"context"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands"
)

// offlineWallets works on a stopped node's data dir, as the node itself (see
// offlineTokens): its audit entries name the node DID.
type offlineWallets struct {
	p       *commands.PaymentAccounts
	nodeDID string
}

func (o offlineWallets) Create(ctx context.Context, in commands.CreatePaymentAccountInput) (commands.PaymentAccount, error) {
	return o.p.Create(ctx, localnode.Owner, o.nodeDID, in)
}

func (o offlineWallets) List(context.Context) ([]commands.PaymentAccount, error) {
	return o.p.List(), nil
}
