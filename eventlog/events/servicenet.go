package events

// Event types of the agent registry proxy (docs/servicenet.md).
//
// The chain is exported to observers, so what an invocation asked and what it
// answered stay between the caller and the registry: the events carry the
// SHA-256 of the canonical request and result, which the caller can check
// against what it holds, never the message, the input, the result or the
// OAuth token.
const (
	// TypeServicenetInvoked is one invocation the registry accepted: completed
	// at once (status "completed", result_sha256 set) or accepted as a task to
	// poll (status "accepted", receipt_id and task_id set).
	TypeServicenetInvoked = "servicenet.invoked"
	// TypeServicenetTaskCompleted and TypeServicenetTaskFailed record, once per
	// task, that an accepted task reached its end.
	TypeServicenetTaskCompleted = "servicenet.task.completed"
	TypeServicenetTaskFailed    = "servicenet.task.failed"
)

// ServicenetInvoked is the payload of servicenet.invoked.
type ServicenetInvoked struct {
	AgentID string `json:"agent_id"`
	// InvokedBy is the DID the token acted as: the node DID for the owner, the
	// identity's DID for an agent token. TokenID names the token.
	InvokedBy string `json:"invoked_by"`
	TokenID   string `json:"token_id"`
	// RequestSHA256 is hex SHA-256 of the RFC 8785 form of {"input","message"}
	// as sent to the registry (input null when none).
	RequestSHA256 string `json:"request_sha256"`
	// OAuth tells whether an auth_token was forwarded with the call; the token
	// itself is never recorded.
	OAuth  bool   `json:"oauth"`
	Status string `json:"status"`
	// ResultSHA256 is hex SHA-256 of the RFC 8785 form of the result of a
	// completed call; null for an accepted one.
	ResultSHA256 *string `json:"result_sha256"`
	ReceiptID    *string `json:"receipt_id"`
	TaskID       *string `json:"task_id"`
	// PaymentID names the payment.authorized this call paid with; null for an
	// unpaid call.
	PaymentID *string `json:"payment_id"`
}

// ServicenetTaskFinished is the payload of servicenet.task.completed (Error
// null) and servicenet.task.failed (ResultSHA256 null).
type ServicenetTaskFinished struct {
	AgentID      string  `json:"agent_id"`
	TaskID       string  `json:"task_id"`
	ReceiptID    string  `json:"receipt_id"`
	ResultSHA256 *string `json:"result_sha256"`
	// Error is the registry's reason, at most 1024 bytes.
	Error *string `json:"error"`
}

// ReceiptRef is what the write side knows of a receipt: which task of which
// agent it polls, who invoked it, and whether its end is recorded.
type ReceiptRef struct {
	ReceiptID string
	AgentID   string
	TaskID    string
	InvokedBy string
	// Status is "accepted" until the task's end is recorded, then "completed"
	// or "failed".
	Status string
}
