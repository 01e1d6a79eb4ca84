package commands

import (
	"context"
	"encoding/json"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// maxTaskError bounds the registry's failure reason kept in the chain.
const maxTaskError = 1024

// Task fetches a task this node invoked from the registry. The owner reads
// every such task; an agent token reads the tasks invoked by a token acting
// for the same identity (servicenet.invoked's invoked_by), so a rotated token
// keeps its identity's tasks. Any other task, one this node never issued
// included, is 404 task_not_found without a registry call: the registry is
// asked with the node's own credentials, which must not read for a token what
// that token may not read. When the task has ended, its end is recorded
// (servicenet.task.completed or servicenet.task.failed), once per task
// however often it is fetched.
func (c *Servicenet) Task(ctx context.Context, a Actor, agentID, taskID string) (servicenet.Task, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return servicenet.Task{}, err
	}
	switch {
	case !servicenet.ValidID(agentID):
		return servicenet.Task{}, invalidID("agent_id")
	case !servicenet.ValidID(taskID):
		return servicenet.Task{}, invalidID("task_id")
	}
	rc, ok, err := c.model.TaskReceipt(agentID, taskID)
	if err != nil {
		return servicenet.Task{}, err
	}
	if !ok || a.Kind == ActorAgent && rc.InvokedBy != a.AgentDID {
		// The same answer whether the task is unknown or another's, so a
		// token cannot tell which task ids exist.
		return servicenet.Task{}, NotFound("task_not_found", "task_id", "no invocation of this node has task %s of agent %s", taskID, agentID)
	}
	t, err := c.registry.GetTask(ctx, agentID, taskID)
	if err != nil {
		return servicenet.Task{}, taskError(err, agentID, taskID)
	}
	if err := c.recordEnd(ctx, agentID, t); err != nil {
		return servicenet.Task{}, err
	}
	return t, nil
}

// ReceiptTask is get_servicenet_receipt's answer: the task a receipt polls,
// with the receipt and agent it belongs to.
type ReceiptTask struct {
	ReceiptID string `json:"receipt_id"`
	AgentID   string `json:"agent_id"`
	servicenet.Task
}

// Receipt resolves a receipt recorded by an earlier invoke, after a restart
// too, and fetches its task. An agent token sees only the receipts of the
// calls it made.
func (c *Servicenet) Receipt(ctx context.Context, a Actor, receiptID string) (ReceiptTask, error) {
	if err := RequireAgentOrOwner(a); err != nil {
		return ReceiptTask{}, err
	}
	rc, ok, err := c.model.ReceiptRef(receiptID)
	if err != nil {
		return ReceiptTask{}, err
	}
	if !ok || a.Kind == ActorAgent && rc.InvokedBy != a.AgentDID {
		return ReceiptTask{}, NotFound("receipt_not_found", "receipt_id", "no invocation of this node has receipt_id %q", receiptID)
	}
	t, err := c.Task(ctx, a, rc.AgentID, rc.TaskID)
	if err != nil {
		return ReceiptTask{}, err
	}
	return ReceiptTask{ReceiptID: rc.ReceiptID, AgentID: rc.AgentID, Task: t}, nil
}

// recordEnd appends the end of t when it has ended and its receipt does not
// record an end yet; the check runs on the sequencer, so two fetches that see
// the end at once record it once.
func (c *Servicenet) recordEnd(ctx context.Context, agentID string, t servicenet.Task) error {
	if !t.Terminal() {
		return nil
	}
	pl := events.ServicenetTaskFinished{AgentID: agentID, TaskID: t.TaskID}
	typ := events.TypeServicenetTaskCompleted
	if t.Status == servicenet.StatusFailed {
		typ = events.TypeServicenetTaskFailed
		msg := truncate(t.Error, maxTaskError)
		pl.Error = &msg
	} else {
		result := t.Result
		if len(result) == 0 {
			result = json.RawMessage(`{}`)
		}
		sum, err := digestRaw(result)
		if err != nil {
			return &Error{Kind: KindUpstream, Code: "registry_bad_response", Message: "task result: " + err.Error()}
		}
		pl.ResultSHA256 = &sum
	}
	_, err := c.log.Decide(ctx, func() ([]eventlog.Draft, error) {
		rc, ok, err := c.model.TaskReceipt(agentID, t.TaskID)
		if err != nil || !ok || rc.Status != servicenet.StatusAccepted {
			return nil, err
		}
		pl.ReceiptID = rc.ReceiptID
		return []eventlog.Draft{{Type: typ, Payload: pl}}, nil
	})
	return err
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// WaitResult is what InvokeAndWait ends with: the invoke's answer when it
// completed, needed consent or failed; otherwise the task as last seen, which
// is "running" when the wait ran out.
type WaitResult struct {
	Invoke  InvokeResult
	AgentID string
	// Task is set when the invoke was accepted.
	Task *servicenet.Task
}

// Body is the answer of invoke_servicenet_agent_sync: the invoke's own body
// when there is no task, otherwise the task with its receipt.
func (r WaitResult) Body() any {
	if r.Task == nil {
		return r.Invoke.Body()
	}
	return ReceiptTask{ReceiptID: r.Invoke.ReceiptID, AgentID: r.AgentID, Task: *r.Task}
}

// InvokeAndWait invokes and, when the registry accepts a task, polls it with
// backoff until it ends or wait passes (invoke_servicenet_agent_sync). A
// task still running then, or one whose poll failed, is returned as last
// seen; its receipt lets the caller go on polling.
func (c *Servicenet) InvokeAndWait(ctx context.Context, a Actor, agentID string, in InvokeInput, wait time.Duration) (WaitResult, error) {
	res, err := c.Invoke(ctx, a, agentID, in)
	if err != nil || res.Status != servicenet.StatusAccepted {
		return WaitResult{Invoke: res, AgentID: agentID}, err
	}
	deadline := time.Now().Add(wait)
	pause := c.pollFirst
	t := servicenet.Task{TaskID: res.TaskID, Status: servicenet.StatusRunning}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return WaitResult{Invoke: res, AgentID: agentID, Task: &t}, nil
		}
		timer := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			// Not an error: the invocation is recorded and may be paid for,
			// and an error would read as a failed call and be repeated. The
			// task as last seen, with its receipt, lets the caller poll on.
			return WaitResult{Invoke: res, AgentID: agentID, Task: &t}, nil
		case <-timer.C:
		}
		next, err := c.Task(ctx, a, agentID, res.TaskID)
		if err != nil {
			// The same: a failed poll, or the caller's time running out
			// during it, ends the wait with the task as last seen.
			return WaitResult{Invoke: res, AgentID: agentID, Task: &t}, nil
		}
		t = next
		if t.Terminal() {
			return WaitResult{Invoke: res, AgentID: agentID, Task: &t}, nil
		}
		pause = min(2*pause, c.pollMax)
	}
}
