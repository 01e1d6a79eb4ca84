package http

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/civnode/civnode/commands"
)

// Payment accounts (docs/servicenet.md): the owner creates and
// lists the EVM accounts the registry proxy pays x402 invoices from. This is
// what `civnode wallet` calls when the node runs. No answer ever carries a
// key: the key stays in its 0600 file in the data directory.

// paymentAccountRoutes registers the payment-account endpoints when the node
// has payment accounts configured.
func (s *Server) paymentAccountRoutes() {
	if s.payments == nil {
		return
	}
	s.handle(http.MethodPost, "/v1/admin/payment-accounts", s.handleCreatePaymentAccount, routeOwner)
	s.handle(http.MethodGet, "/v1/admin/payment-accounts", s.handleListPaymentAccounts, routeOwner)
}

// paymentAccountView is an account as the API shows it. Limits are decimal
// strings in the asset's atomic units (they may pass 2^53), null for none.
type paymentAccountView struct {
	Ref           string  `json:"ref"`
	Address       string  `json:"address"`
	MaxPerPayment *string `json:"max_per_payment"`
	MaxPerDay     *string `json:"max_per_day"`
	CreatedAt     string  `json:"created_at"`
}

type paymentAccountListResponse struct {
	PaymentAccounts []paymentAccountView `json:"payment_accounts"`
}

func viewPaymentAccount(a commands.PaymentAccount) paymentAccountView {
	return paymentAccountView{Ref: a.Ref, Address: a.Address, MaxPerPayment: commands.LimitString(a.MaxPerPayment),
		MaxPerDay: commands.LimitString(a.MaxPerDay), CreatedAt: formatTime(a.CreatedAt)}
}

// handleCreatePaymentAccount answers POST /v1/admin/payment-accounts
// {"ref","max_per_payment","max_per_day"}.
func (s *Server) handleCreatePaymentAccount(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in commands.CreatePaymentAccountInput
	if err := s.decodeJSON(w, r, &in); err != nil {
		return err
	}
	a := requestActor(r.Context())
	acct, err := s.payments.Create(r.Context(), a, auditActor(a), in)
	if err != nil {
		return err
	}
	return writeJSON(w, viewPaymentAccount(acct))
}

// handleListPaymentAccounts answers GET /v1/admin/payment-accounts, by ref.
func (s *Server) handleListPaymentAccounts(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	accts := s.payments.List()
	views := make([]paymentAccountView, 0, len(accts))
	for _, a := range accts {
		views = append(views, viewPaymentAccount(a))
	}
	return writeJSON(w, paymentAccountListResponse{PaymentAccounts: views})
}
