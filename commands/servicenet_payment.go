package commands

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// payment is an authorized x402 payment: what the chain records of it and
// the header that carries its signature to the registry.
type payment struct {
	auth   events.PaymentAuthorized
	header servicenet.PaymentHeader
}

// receipt is the payment.settled payload of p's settlement.
func (p *payment) receipt(s *servicenet.SettlementResponse) events.PaymentReceipt {
	raw := s.Raw
	if len(raw) == 0 {
		raw, _ = json.Marshal(s)
	}
	return events.PaymentReceipt{PaymentID: p.auth.PaymentID, Rail: events.RailX402, AgentID: p.auth.AgentID,
		AccountRef: p.auth.AccountRef, Payer: p.auth.Payer, Network: p.auth.Network, Asset: p.auth.Asset,
		Amount: p.auth.Amount, Success: s.Success, Transaction: s.Transaction, Receipt: raw}
}

// pay answers a registry's 402: it picks the requirement on the requested
// network, checks it against the card and the account's limits, signs, and
// records payment.authorized before the signature leaves the node. A payment
// the limits refuse is never signed, and an authorization that was never
// signed is never recorded, so the day's total counts only payments that
// could be submitted.
//
// The account's lock is held from the limit check to the append: payments
// of one account are decided one after another, so one that passes the check
// is not refused afterwards with its signature already made.
func (c *Servicenet) pay(ctx context.Context, a Actor, agentID string, card servicenet.Card, st *settlement, pr *servicenet.PaymentRequired) (*payment, error) {
	req, err := pr.Select(st.network)
	if err != nil {
		return nil, &Error{Kind: KindInvalid, Code: "network_not_accepted", Field: "settlement.request.network", Message: err.Error()}
	}
	if err := checkPricing(card, req); err != nil {
		return nil, err
	}
	amount, ok := new(big.Int).SetString(req.Amount, 10)
	if !ok || amount.Sign() < 0 {
		return nil, &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: fmt.Sprintf("payment amount %q is not a decimal integer", req.Amount)}
	}
	acct := st.account
	if acct.MaxPerPayment != nil && amount.Cmp(acct.MaxPerPayment) > 0 {
		return nil, spendingLimit(fmt.Sprintf("the registry asks %s, over the max_per_payment %s of payment account %s", amount, acct.MaxPerPayment, acct.Ref),
			amount, "max_per_payment", acct.MaxPerPayment)
	}
	wallet, err := c.accounts.Wallet(acct.Ref)
	if err != nil {
		return nil, walletUnusable(acct.Ref, err)
	}
	if !strings.EqualFold(wallet.Address(), acct.Address) {
		return nil, &Error{Kind: KindFault, Code: "wallet_unusable",
			Message: fmt.Sprintf("payment account %s cannot sign: its key file holds the key of %s, not of the account's %s; nothing was signed",
				acct.Ref, wallet.Address(), acct.Address)}
	}
	var nonce [32]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("payment nonce: %w", err)
	}
	auth, err := servicenet.NewAuthorization(req, wallet.Address(), c.now(), nonce)
	if err != nil {
		return nil, &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: "payment requirement: " + err.Error()}
	}
	id, err := newPaymentID()
	if err != nil {
		return nil, err
	}
	pa := events.PaymentAuthorized{PaymentID: id, Rail: events.RailX402, Scheme: req.Scheme, X402Version: pr.Version,
		AgentID: agentID, AuthorizedBy: actorDID(a, c.log.NodeDID()), AccountRef: acct.Ref, Payer: wallet.Address(),
		PayTo: req.PayTo, Asset: req.Asset, Network: req.Network, Amount: amount.String(),
		Nonce: "0x" + hex.EncodeToString(nonce[:]), ValidAfter: auth.ValidAfter.Int64(), ValidBefore: auth.ValidBefore.Int64()}

	unlock, err := c.lockAccount(ctx, acct.Ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := c.checkDay(acct, amount); err != nil {
		return nil, err
	}
	// The signature exists only in this process until the header is sent,
	// which happens after payment.authorized is durable: a crash in between
	// loses a signature nobody has seen.
	sig, err := wallet.SignTransferAuthorization(ctx, auth)
	if err != nil {
		return nil, fmt.Errorf("sign payment %s: %w", id, err)
	}
	header, err := servicenet.PaymentHeaderFor(pr, req, auth, sig)
	if err != nil {
		return nil, fmt.Errorf("payment header %s: %w", id, err)
	}
	_, err = c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		// Checked again on the sequencer, where nothing can slip in between;
		// under the account's lock it passes as it did above.
		if err := c.checkDay(acct, amount); err != nil {
			return nil, err
		}
		return []eventlog.Draft{{Type: events.TypePaymentAuthorized, Payload: pa}}, nil
	})
	if err != nil {
		return nil, err
	}
	return &payment{auth: pa, header: header}, nil
}

// walletUnusable is the error of a payment account the node will not sign
// with: why and what to do, never the key file's path (a client reads it).
// Any other failure to open the key stays an internal error.
func walletUnusable(ref string, err error) error {
	var kfe *servicenet.KeyFileError
	var msg string
	switch {
	case errors.As(err, &kfe):
		msg = fmt.Sprintf("payment account %s cannot sign: its key file %s; nothing was signed", ref, kfe.Reason)
	case errors.Is(err, servicenet.ErrAccountNotFound):
		msg = fmt.Sprintf("payment account %s cannot sign: its key file is missing from the node's data dir; nothing was signed", ref)
	default:
		return fmt.Errorf("open payment account %s: %w", ref, err)
	}
	return &Error{Kind: KindFault, Code: "wallet_unusable", Message: msg, Err: err}
}

// checkDay refuses amount when it would take acct's total for the UTC day
// above its max_per_day.
func (c *Servicenet) checkDay(acct PaymentAccount, amount *big.Int) error {
	if acct.MaxPerDay == nil {
		return nil
	}
	day := c.now().UTC().Format(time.DateOnly)
	spent, err := c.model.DaySpent(acct.Ref, day)
	if err != nil {
		return err
	}
	if total := new(big.Int).Add(spent, amount); total.Cmp(acct.MaxPerDay) > 0 {
		return spendingLimit(fmt.Sprintf("paying %s would take payment account %s to %s on %s (UTC), over its max_per_day %s",
			amount, acct.Ref, total, day, acct.MaxPerDay), amount, "max_per_day", acct.MaxPerDay)
	}
	return nil
}

// lockAccount takes ref's payment lock, or gives up when ctx ends; the
// returned function releases it.
func (c *Servicenet) lockAccount(ctx context.Context, ref string) (func(), error) {
	v, _ := c.accountLocks.LoadOrStore(ref, make(chan struct{}, 1))
	lock := v.(chan struct{})
	select {
	case lock <- struct{}{}:
		return func() { <-lock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checkPricing holds a requirement to what the card advertises, member by
// member when the card's pricing names it: the asset, the network, the
// recipient (payTo, or pay_to) and the amount, which may be lower than the
// card's but never higher. A registry that asks to be paid otherwise than it
// advertised is not paid. A requirement of amount 0 is not paid either:
// there is nothing to pay, and a signed authorization would still spend a
// nonce and pass for a payment.
func checkPricing(card servicenet.Card, req servicenet.Requirement) error {
	if req.Amount == "0" {
		return &Error{Kind: KindUpstream, Code: "registry_bad_response",
			Message: fmt.Sprintf("the registry asks agent %s to be paid 0, which is no payment; nothing was signed", card.AgentID)}
	}
	var p struct {
		Asset     string `json:"asset"`
		Network   string `json:"network"`
		PayTo     string `json:"payTo"`
		PayToSnek string `json:"pay_to"`
		Amount    string `json:"amount"`
	}
	if len(card.Pricing) == 0 || json.Unmarshal(card.Pricing, &p) != nil {
		return nil
	}
	mismatch := func(format string, args ...any) error {
		return &Error{Kind: KindUpstream, Code: "payment_mismatch", Message: fmt.Sprintf(format, args...) + "; nothing was signed"}
	}
	if p.Asset != "" && !strings.EqualFold(p.Asset, req.Asset) {
		return mismatch("the registry asks for asset %s, but agent %s is priced in %s", req.Asset, card.AgentID, p.Asset)
	}
	if p.Network != "" {
		want, err1 := servicenet.ChainID(p.Network)
		got, err2 := servicenet.ChainID(req.Network)
		if err1 == nil && err2 == nil && want.Cmp(got) != 0 {
			return mismatch("the registry asks for payment on %s, but agent %s is priced on %s", req.Network, card.AgentID, p.Network)
		}
	}
	for _, payTo := range []string{p.PayTo, p.PayToSnek} {
		if payTo != "" && !strings.EqualFold(payTo, req.PayTo) {
			return mismatch("the registry asks for payment to %s, but agent %s is paid to %s", req.PayTo, card.AgentID, payTo)
		}
	}
	if p.Amount != "" {
		price, ok := new(big.Int).SetString(p.Amount, 10)
		asked, ok2 := new(big.Int).SetString(req.Amount, 10)
		if ok && ok2 && asked.Cmp(price) > 0 {
			return mismatch("the registry asks %s, but agent %s is priced at %s", req.Amount, card.AgentID, p.Amount)
		}
	}
	return nil
}

func spendingLimit(msg string, amount *big.Int, limit string, max *big.Int) error {
	return &Error{Kind: KindForbidden, Code: "spending_limit", Field: "settlement.request.payment_account_ref",
		Message: msg + "; nothing was signed",
		Details: map[string]any{"amount": amount.String(), "limit": limit, "max": max.String()}}
}
