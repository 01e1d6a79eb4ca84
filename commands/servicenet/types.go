package servicenet

import (
	"encoding/json"
	"fmt"
	"time"
)

// The registry's shapes: the agent summary, the agent card and the task, which
// the registry answers in the shapes the proxy returns (docs/servicenet.md,
// docs/api.md "Agent registry proxy").

// Summary is one agent of GET {registry}/v1/agents.
type Summary struct {
	AgentID         string `json:"agent_id"`
	Name            string `json:"name"`
	Description     string `json:"description"`
	RequiresPayment bool   `json:"requires_payment"`
	RequiresOAuth   bool   `json:"requires_oauth"`
}

// Card is GET {registry}/v1/agents/{id}. The object-valued members are kept as
// the registry sent them: the node checks their shape, not their content.
type Card struct {
	AgentID     string `json:"agent_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the JSON Schema of an invoke's input; null when the
	// registry gave none (any input object is accepted).
	InputSchema json.RawMessage `json:"input_schema"`
	// SecuritySchemes is present only when the agent needs an OAuth grant.
	SecuritySchemes json.RawMessage `json:"security_schemes,omitempty"`
	// Pricing is the agent's price (currency, rail, network); present when the
	// agent needs payment.
	Pricing json.RawMessage `json:"pricing"`
	// RequiresPayment is the card's own requires_payment when it has one,
	// otherwise whether it has pricing.
	RequiresPayment bool `json:"requires_payment"`
	// RequiresOAuth is whether it has security schemes.
	RequiresOAuth bool `json:"requires_oauth"`
}

// Paid reports whether invoking the agent needs settlement.
func (c Card) Paid() bool { return c.RequiresPayment }

// OAuth is the consent an agent with security_schemes needs, taken from its
// card: the invoke answer when no auth_token was given.
type OAuth struct {
	AuthorizationURL string   `json:"authorizationUrl"`
	TokenURL         string   `json:"tokenUrl"`
	RefreshURL       string   `json:"refreshUrl,omitempty"`
	Scopes           []string `json:"scopes"`
}

// InvokeRequest is the body the node sends to POST {registry}/v1/agents/{id}/invoke.
// AuthToken is the client's OAuth token for this one call; it is sent to the
// registry and nowhere else (String and the logs never show it).
type InvokeRequest struct {
	Message   string          `json:"message"`
	Input     json.RawMessage `json:"input,omitempty"`
	AuthToken string          `json:"auth_token,omitempty"`
}

// String hides the OAuth token, so a request printed by mistake leaks nothing.
func (r InvokeRequest) String() string {
	tok := ""
	if r.AuthToken != "" {
		tok = " auth_token=<redacted>"
	}
	return fmt.Sprintf("invoke{message: %d bytes, input: %d bytes%s}", len(r.Message), len(r.Input), tok)
}

// Invoke statuses.
const (
	StatusCompleted = "completed"
	StatusAccepted  = "accepted"
	StatusRunning   = "running"
	StatusFailed    = "failed"
)

// InvokeResponse is the registry's answer to an invoke: completed with a
// result, or accepted with a receipt and a task to poll.
type InvokeResponse struct {
	Status    string          `json:"status"`
	Result    json.RawMessage `json:"result,omitempty"`
	ReceiptID string          `json:"receipt_id,omitempty"`
	TaskID    string          `json:"task_id,omitempty"`
	// Settlement is the receipt of a paid call, from X-PAYMENT-RESPONSE or
	// PAYMENT-RESPONSE; nil for an unpaid one.
	Settlement *SettlementResponse `json:"-"`
}

// Task is a registry task (docs/api.md, "Agent registry proxy").
type Task struct {
	TaskID string          `json:"task_id"`
	Status string          `json:"status"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Terminal reports whether the task has finished, either way.
func (t Task) Terminal() bool { return t.Status == StatusCompleted || t.Status == StatusFailed }

// ErrorKind classifies a failed registry call.
type ErrorKind uint8

const (
	// ErrUnavailable: the registry could not be reached, answered 5xx or 429
	// after the retries, or refused the node's own credential (502).
	ErrUnavailable ErrorKind = iota + 1
	// ErrTimeout: the registry did not answer in time (504).
	ErrTimeout
	// ErrMalformed: the registry answered something that is not its contract
	// (502); nothing is recorded.
	ErrMalformed
	// ErrNotFound: the registry does not know the agent or the task (404).
	ErrNotFound
	// ErrRejected: the registry refused the request as invalid (400/422); the
	// client can change it.
	ErrRejected
	// ErrPaymentRequired: 402 with payment requirements, returned by Invoke
	// when it was called without a payment, or when the paid retry was refused.
	ErrPaymentRequired
)

// Error is a failed registry call. Message is for humans and never holds a
// credential, a token or a payment signature.
type Error struct {
	Kind ErrorKind
	// Status is the registry's HTTP status; 0 when it gave none.
	Status  int
	Message string
	// RetryAfter is the registry's Retry-After, when it gave one.
	RetryAfter time.Duration
	// Payment is the registry's payment requirements (ErrPaymentRequired).
	Payment *PaymentRequired
}

func (e *Error) Error() string { return "registry: " + e.Message }
