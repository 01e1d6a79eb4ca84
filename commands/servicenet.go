package commands

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Registry is the agent registry the node proxies (*servicenet.Client).
type Registry interface {
	ListAgents(ctx context.Context) ([]servicenet.Summary, error)
	Card(ctx context.Context, agentID string) (servicenet.Card, error)
	Invoke(ctx context.Context, agentID string, req servicenet.InvokeRequest, payment *servicenet.PaymentHeader) (servicenet.InvokeResponse, error)
	GetTask(ctx context.Context, agentID, taskID string) (servicenet.Task, error)
}

// ServicenetReader finds receipts and what payment accounts have spent. The
// commands read it inside eventlog.Log.Decide, so it must be a decision model
// (projections.Servicenet's Decisions).
type ServicenetReader interface {
	ReceiptRef(receiptID string) (events.ReceiptRef, bool, error)
	TaskReceipt(agentID, taskID string) (events.ReceiptRef, bool, error)
	DaySpent(ref, day string) (*big.Int, error)
}

// ServicenetOptions configures NewServicenet. Log, Registry, Model and
// Accounts are required.
type ServicenetOptions struct {
	Log      *eventlog.Log
	Registry Registry
	Model    ServicenetReader
	Accounts *PaymentAccounts
	// Now is the clock of payment validity windows and daily limits; default
	// time.Now.
	Now func() time.Time
	// PollInterval is the first wait between polls of InvokeAndWait, doubling
	// up to PollMax; defaults 250 ms and 5 s.
	PollInterval, PollMax time.Duration
}

// Servicenet runs the agent registry proxy (docs/servicenet.md): it lists
// agents and cards, invokes agents (checking input against the card's schema,
// asking for OAuth consent, paying x402 invoices within the account's limits)
// and follows their tasks. Every invocation the
// registry accepted, every payment authorized and settled, and every task's
// end is an event; a refused or failed call records nothing.
type Servicenet struct {
	log                *eventlog.Log
	registry           Registry
	model              ServicenetReader
	accounts           *PaymentAccounts
	now                func() time.Time
	pollFirst, pollMax time.Duration
	schemas            *schemaCache
	// accountLocks holds one lock per payment account ref (chan struct{}
	// of capacity 1), taken from a payment's limit check to its append.
	accountLocks sync.Map
}

// NewServicenet checks opts and returns the command set.
func NewServicenet(opts ServicenetOptions) (*Servicenet, error) {
	if opts.Log == nil || opts.Registry == nil || opts.Model == nil || opts.Accounts == nil {
		return nil, errors.New("servicenet commands: Log, Registry, Model and Accounts are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 250 * time.Millisecond
	}
	if opts.PollMax <= 0 {
		opts.PollMax = 5 * time.Second
	}
	return &Servicenet{log: opts.Log, registry: opts.Registry, model: opts.Model, accounts: opts.Accounts,
		now: opts.Now, pollFirst: opts.PollInterval, pollMax: opts.PollMax, schemas: newSchemaCache()}, nil
}

// Agents lists the registry's agents.
func (c *Servicenet) Agents(ctx context.Context, a Actor) ([]servicenet.Summary, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return nil, err
	}
	agents, err := c.registry.ListAgents(ctx)
	return agents, registryError(err, "")
}

// Card returns an agent's card.
func (c *Servicenet) Card(ctx context.Context, a Actor, agentID string) (servicenet.Card, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return servicenet.Card{}, err
	}
	card, err := c.registry.Card(ctx, agentID)
	return card, registryError(err, agentID)
}

// registryError turns a registry failure into the command error the client
// sees (docs/api.md: 502 registry_unavailable, 504 registry_timeout).
func registryError(err error, agentID string) error {
	if err == nil {
		return nil
	}
	var idErr *servicenet.InvalidIDError
	if errors.As(err, &idErr) {
		return Invalid(idErr.Field, "%s must be 1..128 of A-Z, a-z, 0-9, '.', '_', ':' and '-'", idErr.Field)
	}
	var re *servicenet.Error
	if !errors.As(err, &re) {
		return err // the caller's context, or a fault of the node
	}
	switch re.Kind {
	case servicenet.ErrTimeout:
		return &Error{Kind: KindUpstreamTimeout, Code: "registry_timeout", Message: re.Message}
	case servicenet.ErrMalformed:
		return &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: re.Message}
	case servicenet.ErrNotFound:
		return NotFound("agent_not_found", "agent_id", "the registry has no agent %s", agentID)
	case servicenet.ErrRejected:
		return &Error{Kind: KindInvalid, Code: "registry_rejected", Message: re.Message}
	case servicenet.ErrPaymentRequired:
		return &Error{Kind: KindUpstream, Code: "payment_refused", Message: "the registry refused the payment: " + re.Message}
	default:
		return &Error{Kind: KindUpstream, Code: "registry_unavailable", Message: re.Message}
	}
}

// taskError is registryError for a call about one task, whose 404 names it.
func taskError(err error, agentID, taskID string) error {
	var re *servicenet.Error
	if errors.As(err, &re) && re.Kind == servicenet.ErrNotFound {
		return NotFound("task_not_found", "task_id", "the registry has no task %s of agent %s", taskID, agentID)
	}
	return registryError(err, agentID)
}

func newPaymentID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("payment id: %w", err)
	}
	return id.String(), nil
}
