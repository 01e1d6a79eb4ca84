package admin

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/civnode/civnode/commands"
	civhttp "github.com/civnode/civnode/http"
)

// onlineWallets manages payment accounts through the admin endpoints of the
// node running on the data dir (POST and GET /v1/admin/payment-accounts),
// over the node channel that sends the owner token to that node only.
type onlineWallets struct{ ch *civhttp.Client }

// accountJSON is an account as the admin endpoints answer it.
type accountJSON struct {
	Ref           string  `json:"ref"`
	Address       string  `json:"address"`
	MaxPerPayment *string `json:"max_per_payment"`
	MaxPerDay     *string `json:"max_per_day"`
	CreatedAt     string  `json:"created_at"`
}

func (j accountJSON) account() (commands.PaymentAccount, error) {
	a := commands.PaymentAccount{Ref: j.Ref, Address: j.Address}
	var err error
	if j.MaxPerPayment != nil {
		if a.MaxPerPayment, err = commands.ParseLimit("max_per_payment", *j.MaxPerPayment); err != nil {
			return a, fmt.Errorf("account %s: %w", j.Ref, err)
		}
	}
	if j.MaxPerDay != nil {
		if a.MaxPerDay, err = commands.ParseLimit("max_per_day", *j.MaxPerDay); err != nil {
			return a, fmt.Errorf("account %s: %w", j.Ref, err)
		}
	}
	if a.CreatedAt, err = time.Parse(time.RFC3339Nano, j.CreatedAt); err != nil {
		return a, fmt.Errorf("account %s: %w", j.Ref, err)
	}
	return a, nil
}

func (o onlineWallets) Create(ctx context.Context, in commands.CreatePaymentAccountInput) (commands.PaymentAccount, error) {
	var out accountJSON
	if err := o.ch.Call(ctx, http.MethodPost, "/v1/admin/payment-accounts", in, &out); err != nil {
		return commands.PaymentAccount{}, err
	}
	return out.account()
}

func (o onlineWallets) List(ctx context.Context) ([]commands.PaymentAccount, error) {
	var out struct {
		PaymentAccounts []accountJSON `json:"payment_accounts"`
	}
	if err := o.ch.Call(ctx, http.MethodGet, "/v1/admin/payment-accounts", nil, &out); err != nil {
		return nil, err
	}
	accts := make([]commands.PaymentAccount, 0, len(out.PaymentAccounts))
	for _, j := range out.PaymentAccounts {
		a, err := j.account()
		if err != nil {
			return nil, err
		}
		accts = append(accts, a)
	}
	return accts, nil
}
