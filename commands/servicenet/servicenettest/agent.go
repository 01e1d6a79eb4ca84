package servicenettest

import (
	"encoding/json"
	"net/http"
	"time"
)

// Agent is one agent of the fake: its card, how it answers an invoke, its
// price and its faults. Zero values give a free agent that completes at once
// with {"answer":"42"}.
type Agent struct {
	ID string
	// Name defaults to ID.
	Name, Description string
	// InputSchema, SecuritySchemes and Pricing are the card's members as
	// sent; nil leaves them out. A paid agent (Price set) without Pricing
	// gets {currency, rail, network, asset, amount} from its Price.
	InputSchema, SecuritySchemes, Pricing json.RawMessage
	// RequiresPayment is the card's requires_payment; nil sends true for an
	// agent with a Price and leaves the member out otherwise.
	RequiresPayment *bool

	// Result is a synchronous invoke's result; default {"answer":"42"}.
	Result json.RawMessage
	// Async, when set, makes invoke answer "accepted" with a new task.
	Async *Async
	// Price, when set, makes invoke answer 402 until it is paid.
	Price *Price

	// Faults per route; nil answers normally.
	CardFault, InvokeFault, TaskFault *Fault
}

// Async is an agent that accepts a task: the task answers "running" to its
// first RunningPolls fetches, then "completed" with Result, or "failed" with
// Error when Error is set.
type Async struct {
	// ReceiptID and TaskID default to rcpt-N and task-N, N counting the
	// registry's accepted invokes.
	ReceiptID, TaskID string
	RunningPolls      int
	Result            json.RawMessage
	Error             string
}

// Fault replaces a route's answer. The fake waits Delay (or until the client
// gives up), then answers Status with Body and Header. With neither Status nor
// Body set it answers normally after the delay. Status defaults to 200 when
// Body is set; Body defaults to {"error":"fault"} when Status is.
type Fault struct {
	Status int
	Body   []byte
	Header http.Header
	Delay  time.Duration
	// Times limits the fault to the route's first Times requests; 0: all.
	Times int
}

// apply answers with the fault when it applies to the hit-th request of its
// route, and reports whether it did. A nil fault never applies.
func (f *Fault) apply(w http.ResponseWriter, req *http.Request, hit int) bool {
	if f == nil || f.Times > 0 && hit > f.Times {
		return false
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			// The client has gone; nobody reads an answer.
			return true
		}
	}
	if f.Status == 0 && f.Body == nil {
		return false
	}
	status, body := f.Status, f.Body
	if status == 0 {
		status = http.StatusOK
	}
	if body == nil {
		body = []byte(`{"error":"fault"}`)
	}
	for k, vs := range f.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	w.Write(body)
	return true
}

func (a *Agent) name() string {
	if a.Name == "" {
		return a.ID
	}
	return a.Name
}

// paid is the summary's requires_payment.
func (a *Agent) paid() bool {
	if a.RequiresPayment != nil {
		return *a.RequiresPayment
	}
	return a.Price != nil
}

// cardJSON is the card as the registry sends it.
type cardJSON struct {
	AgentID         string          `json:"agent_id"`
	Name            string          `json:"name"`
	Description     string          `json:"description"`
	InputSchema     json.RawMessage `json:"input_schema,omitempty"`
	SecuritySchemes json.RawMessage `json:"security_schemes,omitempty"`
	Pricing         json.RawMessage `json:"pricing,omitempty"`
	RequiresPayment *bool           `json:"requires_payment,omitempty"`
}

func (a *Agent) card() cardJSON {
	c := cardJSON{AgentID: a.ID, Name: a.name(), Description: a.Description, InputSchema: a.InputSchema,
		SecuritySchemes: a.SecuritySchemes, Pricing: a.Pricing, RequiresPayment: a.RequiresPayment}
	if a.Price != nil {
		if c.Pricing == nil {
			c.Pricing, _ = json.Marshal(a.Price.Pricing())
		}
		if c.RequiresPayment == nil {
			yes := true
			c.RequiresPayment = &yes
		}
	}
	return c
}
