package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
)

// Payment accounts (docs/servicenet.md): the EVM keys the node pays x402 invoices
// with, each named by a ref that an invoke's payment_account_ref names, and
// each with its own spending limits. The key is a 0600 file kept by a
// servicenet.Keystore; the account's record (address and limits) is
// administrative state beside the tokens (eventlog records of kind
// "payment_account"), audited as payment_account.created. Neither the key nor
// anything derived from it but the address ever leaves the key file.

// PaymentAccountRecordKind is the eventlog record kind of payment accounts.
const PaymentAccountRecordKind = "payment_account"

// Keystore creates and opens payment-account keys; *servicenet.Keystore is the
// local one.
type Keystore interface {
	Create(ref string) (address string, err error)
	Wallet(ref string) (servicenet.Wallet, error)
}

// PaymentAccount is one account: its address and limits, never its key.
// A nil limit is no limit. Limits are in the asset's atomic units.
type PaymentAccount struct {
	Ref           string
	Address       string
	MaxPerPayment *big.Int
	MaxPerDay     *big.Int
	CreatedAt     time.Time
}

// paymentAccountRecord is the stored and audited form of an account.
type paymentAccountRecord struct {
	Ref           string  `json:"ref"`
	Address       string  `json:"address"`
	MaxPerPayment *string `json:"max_per_payment"`
	MaxPerDay     *string `json:"max_per_day"`
	CreatedAt     string  `json:"created_at"`
}

// PaymentAccountsOptions configures NewPaymentAccounts; every field is required.
type PaymentAccountsOptions struct {
	Store   TokenStore
	Auditor TokenAuditor
	Keys    Keystore
	Now     func() time.Time
}

// PaymentAccounts creates and finds payment accounts.
type PaymentAccounts struct {
	store   TokenStore
	auditor TokenAuditor
	keys    Keystore
	now     func() time.Time

	mu       sync.Mutex // serialises Create: one ref, one key
	accounts map[string]PaymentAccount
}

// NewPaymentAccounts loads the account records.
func NewPaymentAccounts(opts PaymentAccountsOptions) (*PaymentAccounts, error) {
	if opts.Store == nil || opts.Auditor == nil || opts.Keys == nil {
		return nil, errors.New("payment accounts: Store, Auditor and Keys are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &PaymentAccounts{store: opts.Store, auditor: opts.Auditor, keys: opts.Keys, now: opts.Now,
		accounts: map[string]PaymentAccount{}}
	recs, err := opts.Store.Records(PaymentAccountRecordKind)
	if err != nil {
		return nil, fmt.Errorf("payment accounts: %w", err)
	}
	for _, b := range recs {
		var r paymentAccountRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("payment accounts: decode record: %w", err)
		}
		a, err := r.account()
		if err != nil {
			return nil, fmt.Errorf("payment accounts: record %s: %w", r.Ref, err)
		}
		p.accounts[a.Ref] = a
	}
	return p, nil
}

// CreatePaymentAccountInput is a new account (POST /v1/admin/payment-accounts,
// civnode wallet create). Limits are decimal integers in the asset's atomic
// units; null or absent is no limit.
type CreatePaymentAccountInput struct {
	Ref           *string `json:"ref"`
	MaxPerPayment *string `json:"max_per_payment"`
	MaxPerDay     *string `json:"max_per_day"`
}

// Create makes a new key for in.Ref, records the account and audits it. Only
// the owner may create accounts.
func (p *PaymentAccounts) Create(ctx context.Context, a Actor, auditActor string, in CreatePaymentAccountInput) (PaymentAccount, error) {
	if err := RequireOwner(a); err != nil {
		return PaymentAccount{}, err
	}
	if in.Ref == nil {
		return PaymentAccount{}, Missing("ref")
	}
	ref := *in.Ref
	if !servicenet.ValidRef(ref) {
		return PaymentAccount{}, Invalid("ref", "ref must be 1..64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	}
	perPayment, err := parseLimit("max_per_payment", in.MaxPerPayment)
	if err != nil {
		return PaymentAccount{}, err
	}
	perDay, err := parseLimit("max_per_day", in.MaxPerDay)
	if err != nil {
		return PaymentAccount{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.accounts[ref]; ok {
		return PaymentAccount{}, Conflict("payment_account_exists", "ref", "a payment account named %s exists already", ref)
	}
	addr, err := p.keys.Create(ref)
	if errors.Is(err, servicenet.ErrAccountExists) {
		// A key file without a record: an earlier create stopped between the
		// two. The key may have been funded; it is never overwritten.
		return PaymentAccount{}, Conflict("payment_account_exists", "ref",
			"a key for payment account %s exists already in the data directory; move it away to reuse the name", ref)
	}
	if err != nil {
		return PaymentAccount{}, fmt.Errorf("create payment account key: %w", err)
	}
	acct := PaymentAccount{Ref: ref, Address: addr, MaxPerPayment: perPayment, MaxPerDay: perDay,
		CreatedAt: p.now().UTC().Truncate(time.Microsecond)}
	rec := acct.record()
	b, err := json.Marshal(rec)
	if err != nil {
		return PaymentAccount{}, err
	}
	if err := p.store.PutRecord(PaymentAccountRecordKind, ref, b); err != nil {
		return PaymentAccount{}, fmt.Errorf("record payment account: %w", err)
	}
	p.accounts[ref] = acct
	if _, err := p.auditor.Audit(ctx, "payment_account.created", auditActor, rec); err != nil {
		return PaymentAccount{}, fmt.Errorf("audit payment account: %w", err)
	}
	return acct, nil
}

// List returns every account, by ref.
func (p *PaymentAccounts) List() []PaymentAccount {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PaymentAccount, 0, len(p.accounts))
	for _, a := range p.accounts {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b PaymentAccount) int { return strings.Compare(a.Ref, b.Ref) })
	return out
}

// Account returns the account ref.
func (p *PaymentAccounts) Account(ref string) (PaymentAccount, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.accounts[ref]
	return a, ok
}

// Wallet opens the signer of account ref.
func (p *PaymentAccounts) Wallet(ref string) (servicenet.Wallet, error) {
	return p.keys.Wallet(ref)
}

func (a PaymentAccount) record() paymentAccountRecord {
	return paymentAccountRecord{Ref: a.Ref, Address: a.Address, MaxPerPayment: limitString(a.MaxPerPayment),
		MaxPerDay: limitString(a.MaxPerDay), CreatedAt: a.CreatedAt.Format(time.RFC3339Nano)}
}

func (r paymentAccountRecord) account() (PaymentAccount, error) {
	perPayment, err := parseLimit("max_per_payment", r.MaxPerPayment)
	if err != nil {
		return PaymentAccount{}, err
	}
	perDay, err := parseLimit("max_per_day", r.MaxPerDay)
	if err != nil {
		return PaymentAccount{}, err
	}
	at, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	if err != nil {
		return PaymentAccount{}, err
	}
	return PaymentAccount{Ref: r.Ref, Address: r.Address, MaxPerPayment: perPayment, MaxPerDay: perDay, CreatedAt: at}, nil
}

// maxLimitDigits bounds a limit's length: 78 digits hold any uint256, the
// largest amount an EVM token can move.
const maxLimitDigits = 78

// parseLimit reads a limit: a decimal integer ≥ 0 without sign or leading
// zeros, or nil for none.
func parseLimit(field string, s *string) (*big.Int, error) {
	if s == nil {
		return nil, nil
	}
	v := *s
	if v == "" || len(v) > maxLimitDigits || strings.TrimLeft(v, "0123456789") != "" || len(v) > 1 && v[0] == '0' {
		return nil, Invalid(field, "%s must be a decimal integer in the asset's atomic units, at most %d digits", field, maxLimitDigits)
	}
	n, _ := new(big.Int).SetString(v, 10)
	return n, nil
}

// ParseLimit is parseLimit for the command line, which reads the same values.
func ParseLimit(field, s string) (*big.Int, error) { return parseLimit(field, &s) }

func limitString(n *big.Int) *string {
	if n == nil {
		return nil
	}
	s := n.String()
	return &s
}

// LimitString renders a limit as the API shows it: its decimal digits, or nil
// for none.
func LimitString(n *big.Int) *string { return limitString(n) }
