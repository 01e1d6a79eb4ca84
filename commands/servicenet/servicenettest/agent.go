package servicenettest

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/civnode/civnode/commands/servicenet/registrydev"
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
// first RunningPolls fetches, then "completed" with Result (default
// {"answer":"42"}), or "failed" with Error when Error is set. ReceiptID and
// TaskID default to rcpt-N and task-N, N counting the registry's accepted
// invokes.
type Async = registrydev.Async

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

// dev is a as registrydev's registry serves it: its answer is its Result,
// {"answer":"42"} by default, which is also an Async's default.
func (a *Agent) dev() registrydev.Agent {
	d := registrydev.Agent{ID: a.ID, Name: a.Name, Description: a.Description, InputSchema: a.InputSchema,
		SecuritySchemes: a.SecuritySchemes, Pricing: a.Pricing, RequiresPayment: a.RequiresPayment, Async: a.Async}
	result := a.Result
	if len(result) == 0 || a.Async != nil {
		result = json.RawMessage(`{"answer":"42"}`)
	}
	d.Answer = func(registrydev.Invocation, time.Time) (json.RawMessage, error) { return result, nil }
	if a.Price != nil {
		p := a.Price.dev()
		d.Price = &p
	}
	return d
}
