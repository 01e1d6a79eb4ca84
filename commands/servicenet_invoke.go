package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// InvokeInput is the invoke body (docs/servicenet.md, "Invoking").
type InvokeInput struct {
	// Message is the natural-language instruction; required.
	Message *string `json:"message"`
	// Input must match the agent's input_schema; a JSON object.
	Input json.RawMessage `json:"input"`
	// Settlement pays a paid agent; omitted for free agents.
	Settlement *SettlementInput `json:"settlement"`
	// AuthToken is the OAuth access token of an agent with security schemes.
	// It is forwarded to the registry for this one call and never recorded.
	AuthToken *string `json:"auth_token"`
}

// SettlementInput is the invoke's settlement object.
type SettlementInput struct {
	Layer   *string                 `json:"layer"`
	Rail    *string                 `json:"rail"`
	Request *SettlementRequestInput `json:"request"`
}

// SettlementRequestInput is settlement.request.
type SettlementRequestInput struct {
	Protocol          *string `json:"protocol"`
	PaymentAccountRef *string `json:"payment_account_ref"`
	Network           *string `json:"network"`
}

// InvokeResult is what an invoke answered. Exactly one of three holds: a
// completed call (Status "completed", Result), an accepted one (Status
// "accepted", ReceiptID, TaskID), or a consent still needed (OAuth set,
// Status empty, nothing invoked).
type InvokeResult struct {
	Status    string
	Result    json.RawMessage
	ReceiptID string
	TaskID    string
	OAuth     *servicenet.OAuth
	// PaymentID names the payment this call made; empty when unpaid.
	PaymentID string
	// Events are the durable events appended.
	Events []eventlog.Event
}

// Body is the answer as the HTTP API and the MCP tools return it.
func (r InvokeResult) Body() any {
	switch {
	case r.OAuth != nil:
		return r.OAuth
	case r.Status == servicenet.StatusCompleted:
		return struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
		}{r.Status, r.Result}
	default:
		return struct {
			Status    string `json:"status"`
			ReceiptID string `json:"receipt_id"`
			TaskID    string `json:"task_id"`
		}{r.Status, r.ReceiptID, r.TaskID}
	}
}

// settlement is a checked SettlementInput.
type settlement struct {
	account PaymentAccount
	network string
}

// Invoke invokes an agent through the registry. It checks the body, the
// card's input schema, OAuth and payment before the registry is called;
// pays a 402 within the account's limits; and records servicenet.invoked
// (with payment.settled for a paid call) once the registry has accepted.
func (c *Servicenet) Invoke(ctx context.Context, a Actor, agentID string, in InvokeInput) (InvokeResult, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return InvokeResult{}, err
	}
	if !servicenet.ValidID(agentID) {
		return InvokeResult{}, invalidID("agent_id")
	}
	st, err := c.checkInvoke(a, in)
	if err != nil {
		return InvokeResult{}, err
	}
	card, err := c.registry.Card(ctx, agentID)
	if err != nil {
		return InvokeResult{}, registryError(err, agentID)
	}
	input := in.Input
	if len(input) == 0 || string(input) == "null" {
		input = nil
	}
	if err := c.checkSchema(card, input); err != nil {
		return InvokeResult{}, err
	}
	if card.RequiresOAuth && in.AuthToken == nil {
		consent, err := servicenet.Consent(card)
		if err != nil {
			return InvokeResult{}, &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: err.Error()}
		}
		return InvokeResult{OAuth: &consent}, nil
	}
	if card.Paid() && st == nil {
		return InvokeResult{}, settlementRequired(card.Pricing)
	}
	req := servicenet.InvokeRequest{Message: *in.Message, Input: input}
	if in.AuthToken != nil {
		req.AuthToken = *in.AuthToken
	}
	resp, err := c.registry.Invoke(ctx, agentID, req, nil)
	var paid *payment
	if pr := paymentRequired(err); pr != nil {
		if st == nil {
			return InvokeResult{}, settlementRequired(card.Pricing)
		}
		paid, err = c.pay(ctx, a, agentID, card, st, pr)
		if err != nil {
			return InvokeResult{}, err
		}
		resp, err = c.registry.Invoke(ctx, agentID, req, &paid.header)
	}
	if err != nil {
		return InvokeResult{}, registryError(err, agentID)
	}
	return c.recordInvoked(ctx, a, agentID, req, resp, paid)
}

// checkInvoke checks the body alone: every 400 that needs no registry.
func (c *Servicenet) checkInvoke(a Actor, in InvokeInput) (*settlement, error) {
	switch {
	case in.Message == nil:
		return nil, Missing("message")
	case *in.Message == "":
		return nil, Invalid("message", "message must not be empty")
	case len(in.Input) > 0 && string(in.Input) != "null" && in.Input[0] != '{':
		return nil, Invalid("input", "input must be a JSON object")
	case in.AuthToken != nil && *in.AuthToken == "":
		return nil, Invalid("auth_token", "auth_token must not be empty; omit it when the agent needs no OAuth")
	}
	if in.Settlement == nil {
		return nil, nil
	}
	s := in.Settlement
	if err := requireValue("settlement.layer", s.Layer, "web3"); err != nil {
		return nil, err
	}
	if err := requireValue("settlement.rail", s.Rail, events.RailX402); err != nil {
		return nil, err
	}
	if s.Request == nil {
		return nil, Missing("settlement.request")
	}
	r := s.Request
	if err := requireValue("settlement.request.protocol", r.Protocol, "x402"); err != nil {
		return nil, err
	}
	switch {
	case r.PaymentAccountRef == nil:
		return nil, Missing("settlement.request.payment_account_ref")
	case r.Network == nil:
		return nil, Missing("settlement.request.network")
	}
	if _, err := servicenet.ChainID(*r.Network); err != nil {
		return nil, Invalid("settlement.request.network", "network %q is not an EVM network the node can pay on", *r.Network)
	}
	acct, ok := c.accounts.Account(*r.PaymentAccountRef)
	if !ok {
		return nil, &Error{Kind: KindInvalid, Code: "unknown_payment_account", Field: "settlement.request.payment_account_ref",
			Message: fmt.Sprintf("no payment account is named %q; create one with civnode wallet create", *r.PaymentAccountRef)}
	}
	if a.Kind != ActorOwner {
		// Payment accounts are the node's money: only its owner spends them.
		return nil, Forbidden("forbidden", "only the owner token may pay from a payment account")
	}
	return &settlement{account: acct, network: *r.Network}, nil
}

func requireValue(field string, v *string, want string) error {
	if v == nil {
		return Missing(field)
	}
	if *v != want {
		return Invalid(field, "%s must be %q", field, want)
	}
	return nil
}

func invalidID(field string) error {
	return Invalid(field, "%s must be 1..128 of A-Z, a-z, 0-9, '.', '_', ':' and '-'", field)
}

// checkSchema checks input against the card's input_schema.
func (c *Servicenet) checkSchema(card servicenet.Card, input json.RawMessage) error {
	if len(card.InputSchema) == 0 || string(card.InputSchema) == "null" {
		return nil
	}
	inst := input
	if inst == nil {
		inst = json.RawMessage(`{}`)
	}
	violations, err := c.schemas.validate(card.InputSchema, inst)
	if errors.Is(err, errBadSchema) {
		return &Error{Kind: KindUpstream, Code: "registry_bad_response",
			Message: fmt.Sprintf("the input_schema of agent %s is not a usable JSON Schema", card.AgentID)}
	}
	if err != nil {
		return err
	}
	if len(violations) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Code: "invalid_input", Field: "input",
		Message: fmt.Sprintf("input does not match the input_schema of agent %s: %d violation(s)", card.AgentID, len(violations)),
		Details: map[string]any{"violations": violations}}
}

func settlementRequired(pricing json.RawMessage) error {
	if len(pricing) == 0 {
		pricing = json.RawMessage("null")
	}
	return &Error{Kind: KindInvalid, Code: "settlement_required", Field: "settlement",
		Message: "this agent requires payment: add a settlement object naming a payment account",
		Details: map[string]any{"pricing": pricing}}
}

// paymentRequired returns the requirements of a registry's 402.
func paymentRequired(err error) *servicenet.PaymentRequired {
	var re *servicenet.Error
	if errors.As(err, &re) && re.Kind == servicenet.ErrPaymentRequired && re.Payment != nil {
		return re.Payment
	}
	return nil
}

// recordInvoked appends servicenet.invoked, with payment.settled for a paid
// call whose receipt says it settled.
func (c *Servicenet) recordInvoked(ctx context.Context, a Actor, agentID string, req servicenet.InvokeRequest, resp servicenet.InvokeResponse, paid *payment) (InvokeResult, error) {
	reqSum, err := digest(struct {
		Input   json.RawMessage `json:"input"`
		Message string          `json:"message"`
	}{orNull(req.Input), req.Message})
	if err != nil {
		return InvokeResult{}, err
	}
	inv := events.ServicenetInvoked{AgentID: agentID, InvokedBy: actorDID(a, c.log.NodeDID()), TokenID: a.TokenID,
		RequestSHA256: reqSum, OAuth: req.AuthToken != "", Status: resp.Status}
	res := InvokeResult{Status: resp.Status}
	if resp.Status == servicenet.StatusCompleted {
		sum, err := digestRaw(resp.Result)
		if err != nil {
			return InvokeResult{}, &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: "result: " + err.Error()}
		}
		inv.ResultSHA256, res.Result = &sum, resp.Result
	} else {
		inv.ReceiptID, inv.TaskID = &resp.ReceiptID, &resp.TaskID
		res.ReceiptID, res.TaskID = resp.ReceiptID, resp.TaskID
	}
	drafts := []eventlog.Draft{}
	if paid != nil {
		inv.PaymentID, res.PaymentID = &paid.auth.PaymentID, paid.auth.PaymentID
	}
	drafts = append(drafts, eventlog.Draft{Type: events.TypeServicenetInvoked, Payload: inv})
	if paid != nil && resp.Settlement != nil && resp.Settlement.Success {
		drafts = append(drafts, eventlog.Draft{Type: events.TypePaymentSettled, Payload: paid.receipt(resp.Settlement)})
	}
	// The registry has accepted, and may have been paid: that is recorded
	// even if the caller has gone meanwhile, or its receipt would be lost.
	var reused error
	evs, err := c.log.Decide(context.WithoutCancel(ctx), func() ([]eventlog.Draft, error) {
		if resp.Status == servicenet.StatusAccepted {
			if _, ok, err := c.model.ReceiptRef(resp.ReceiptID); err != nil {
				return nil, err
			} else if ok {
				// The call cannot be recorded: its receipt would resolve to
				// the earlier call's task. The money that moved is recorded
				// all the same, and the caller told so.
				msg := fmt.Sprintf("the registry answered receipt_id %s, which an earlier invocation of this node has; "+
					"it may have done the work, but the node cannot record or follow a call it cannot tell from the earlier one", resp.ReceiptID)
				if paid == nil {
					return nil, &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: msg}
				}
				msg += fmt.Sprintf("; its payment %s is recorded (payment.authorized", paid.auth.PaymentID)
				if len(drafts) > 1 {
					msg += ", payment.settled"
				}
				reused = &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: msg + ")"}
				return drafts[1:], nil
			}
		}
		return drafts, nil
	})
	if err == nil && reused != nil {
		err = reused
	}
	if err != nil {
		return InvokeResult{}, err
	}
	res.Events = evs
	return res, nil
}

// actorDID is the DID a actor acts as.
func actorDID(a Actor, nodeDID string) string {
	if a.Kind == ActorAgent {
		return a.AgentDID
	}
	return nodeDID
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// digest is hex SHA-256 of v's RFC 8785 form.
func digest(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return digestRaw(raw)
}

// digestRaw is hex SHA-256 of the RFC 8785 form of a JSON object.
func digestRaw(raw json.RawMessage) (string, error) {
	b, err := eventlog.CanonicalObject(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
