package projections

import (
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// Servicenet answers the registry proxy's queries from the servicenet read
// model: the receipts of accepted invocations, so that a receipt resolves to
// its agent and task after a restart and a task's end is recorded once, and
// what each payment account has authorized per UTC day, which the daily
// spending limit is checked against.
//
// Its state lives in the log's model space under these keys:
//
//	s/r 0 <receipt_id>              the receipt (Receipt, JSON)
//	s/t 0 <agent_id> 0 <task_id>    receipt_id of the task
//	s/d 0 <account_ref> 0 <date>    amount authorized that UTC day, a decimal integer
//	s/p 0 <payment_id>              the payment (Payment, JSON)
//	s/c 0 <name>                    counters (ServicenetMetrics)
//	s/k                             events the model could not apply
type Servicenet struct{ queries }

// ServicenetMetrics counts what the model holds, for civnode replay.
type ServicenetMetrics struct {
	// Receipts are the accepted invocations; Open those whose task's end is
	// not recorded.
	Receipts, Open int64
	// Payments are the x402 payments authorized; Settled those with a receipt.
	Payments, Settled int64
}

// Receipt is an accepted invocation as the model keeps it.
type Receipt struct {
	ReceiptID string `json:"receipt_id"`
	AgentID   string `json:"agent_id"`
	TaskID    string `json:"task_id"`
	InvokedBy string `json:"invoked_by"`
	// Status is "accepted" until the task's end is recorded, then
	// "completed" or "failed".
	Status     string  `json:"status"`
	InvokedAt  string  `json:"invoked_at"`
	FinishedAt *string `json:"finished_at"`
	// ResultSHA256 and Error are those of the task's end.
	ResultSHA256 *string `json:"result_sha256"`
	Error        *string `json:"error"`
}

// Payment is an x402 payment as the model keeps it.
type Payment struct {
	events.PaymentAuthorized
	AuthorizedAt string  `json:"authorized_at"`
	Settled      bool    `json:"settled"`
	Transaction  *string `json:"transaction"`
}

// Key tags of the servicenet model.
const (
	snReceipt = "s/r"
	snTask    = "s/t"
	snDay     = "s/d"
	snPayment = "s/p"
	snCount   = "s/c"
	snSkipped = "s/k"
)

// Metrics returns the model's counters.
func (p *Servicenet) Metrics() (ServicenetMetrics, error) {
	r, done, err := p.reader()
	if err != nil {
		return ServicenetMetrics{}, err
	}
	defer done()
	var m ServicenetMetrics
	for _, c := range []struct {
		name string
		dst  *int64
	}{{"receipts", &m.Receipts}, {"open", &m.Open}, {"payments", &m.Payments}, {"settled", &m.Settled}} {
		if *c.dst, err = counter(r, key(snCount, c.name)); err != nil {
			return ServicenetMetrics{}, err
		}
	}
	return m, nil
}

// NewServicenet returns the queries of the servicenet model kept in src; they
// see durable state only.
func NewServicenet(src Source) *Servicenet { return &Servicenet{queries{src: src}} }

// Decisions returns the same model read at its newest state, sequenced events
// included: what commands consult inside eventlog.Log.Decide.
func (p *Servicenet) Decisions() *Servicenet { return &Servicenet{p.decisions()} }

// Skipped counts servicenet and x402 payment events that could not be
// applied. It stays 0 on a chain written by civnode's commands.
func (p *Servicenet) Skipped() (uint64, error) { return skipped(p.src, key(snSkipped)) }

// Receipt returns the receipt receiptID.
func (p *Servicenet) Receipt(receiptID string) (Receipt, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return Receipt{}, false, err
	}
	defer done()
	var rc Receipt
	ok, err := load(r, key(snReceipt, receiptID), &rc)
	return rc, ok, err
}

// ReceiptRef is Receipt as the write side needs it.
func (p *Servicenet) ReceiptRef(receiptID string) (events.ReceiptRef, bool, error) {
	rc, ok, err := p.Receipt(receiptID)
	if err != nil || !ok {
		return events.ReceiptRef{}, ok, err
	}
	return events.ReceiptRef{ReceiptID: rc.ReceiptID, AgentID: rc.AgentID, TaskID: rc.TaskID,
		InvokedBy: rc.InvokedBy, Status: rc.Status}, true, nil
}

// TaskReceipt returns the receipt of agentID's task taskID.
func (p *Servicenet) TaskReceipt(agentID, taskID string) (events.ReceiptRef, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return events.ReceiptRef{}, false, err
	}
	b, ok, err := r.Get(key(snTask, agentID, taskID))
	done()
	if err != nil {
		return events.ReceiptRef{}, false, storeErr(err)
	}
	if !ok {
		return events.ReceiptRef{}, false, nil
	}
	return p.ReceiptRef(string(b))
}

// DaySpent is what account ref has authorized on the UTC date day
// (YYYY-MM-DD), in the asset's atomic units.
func (p *Servicenet) DaySpent(ref, day string) (*big.Int, error) {
	r, done, err := p.reader()
	if err != nil {
		return nil, err
	}
	defer done()
	return dayTotal(r, ref, day)
}

// Payment returns the payment paymentID.
func (p *Servicenet) Payment(paymentID string) (Payment, bool, error) {
	r, done, err := p.reader()
	if err != nil {
		return Payment{}, false, err
	}
	defer done()
	var pm Payment
	ok, err := load(r, key(snPayment, paymentID), &pm)
	return pm, ok, err
}

func dayTotal(r reader, ref, day string) (*big.Int, error) {
	b, ok, err := r.Get(key(snDay, ref, day))
	if err != nil {
		return nil, storeErr(err)
	}
	n := new(big.Int)
	if !ok {
		return n, nil
	}
	if _, ok := n.SetString(string(b), 10); !ok {
		return nil, storeErr(fmt.Errorf("day total %q of %s is not a decimal integer", b, ref))
	}
	return n, nil
}

// foldServicenet folds one event into the servicenet model.
func foldServicenet(w writer, ev *eventlog.Event) error {
	switch ev.Type {
	case events.TypeServicenetInvoked:
		return applyInvoked(w, ev)
	case events.TypeServicenetTaskCompleted, events.TypeServicenetTaskFailed:
		return applyTaskFinished(w, ev)
	case events.TypePaymentAuthorized:
		return applyPaymentAuthorized(w, ev)
	case events.TypePaymentSettled:
		return applyPaymentReceipt(w, ev)
	default:
		return errNotOurs
	}
}

// applyInvoked records the receipt of an accepted invocation; a completed one
// leaves no state to poll.
func applyInvoked(w writer, ev *eventlog.Event) error {
	var pl events.ServicenetInvoked
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.PaymentID != nil {
		if _, err := payment(w, *pl.PaymentID); err != nil {
			return err
		}
	}
	if pl.Status != "accepted" {
		return nil
	}
	if pl.ReceiptID == nil || pl.TaskID == nil {
		return errors.New("an accepted invocation without receipt_id or task_id")
	}
	k := key(snReceipt, *pl.ReceiptID)
	if _, ok, err := w.Get(k); err != nil {
		return storeErr(err)
	} else if ok {
		return fmt.Errorf("receipt %s is recorded already", *pl.ReceiptID)
	}
	w.Set(key(snTask, pl.AgentID, *pl.TaskID), []byte(*pl.ReceiptID))
	if err := add(w, key(snCount, "receipts"), 1); err != nil {
		return err
	}
	if err := add(w, key(snCount, "open"), 1); err != nil {
		return err
	}
	return store(w, k, Receipt{ReceiptID: *pl.ReceiptID, AgentID: pl.AgentID, TaskID: *pl.TaskID,
		InvokedBy: pl.InvokedBy, Status: "accepted", InvokedAt: ev.Timestamp})
}

// applyTaskFinished records a task's end, once.
func applyTaskFinished(w writer, ev *eventlog.Event) error {
	var pl events.ServicenetTaskFinished
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	var rc Receipt
	ok, err := load(w, key(snReceipt, pl.ReceiptID), &rc)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("unknown receipt %q", pl.ReceiptID)
	case rc.AgentID != pl.AgentID || rc.TaskID != pl.TaskID:
		return fmt.Errorf("receipt %s is of another task", pl.ReceiptID)
	case rc.Status != "accepted":
		return fmt.Errorf("the end of task %s is recorded already", pl.TaskID)
	}
	rc.Status = "completed"
	if ev.Type == events.TypeServicenetTaskFailed {
		rc.Status = "failed"
	}
	if err := add(w, key(snCount, "open"), -1); err != nil {
		return err
	}
	at := ev.Timestamp
	rc.FinishedAt, rc.ResultSHA256, rc.Error = &at, pl.ResultSHA256, pl.Error
	return store(w, key(snReceipt, rc.ReceiptID), rc)
}

// applyPaymentAuthorized adds an authorization to its account's day.
func applyPaymentAuthorized(w writer, ev *eventlog.Event) error {
	var pl events.PaymentAuthorized
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	amount, ok := new(big.Int).SetString(pl.Amount, 10)
	if !ok || amount.Sign() < 0 {
		return fmt.Errorf("amount %q is not a decimal integer ≥ 0", pl.Amount)
	}
	k := key(snPayment, pl.PaymentID)
	if _, ok, err := w.Get(k); err != nil {
		return storeErr(err)
	} else if ok {
		return fmt.Errorf("payment %s is recorded already", pl.PaymentID)
	}
	day, err := utcDay(ev.Timestamp)
	if err != nil {
		return err
	}
	total, err := dayTotal(w, pl.AccountRef, day)
	if err != nil {
		return err
	}
	w.Set(key(snDay, pl.AccountRef, day), []byte(total.Add(total, amount).String()))
	if err := add(w, key(snCount, "payments"), 1); err != nil {
		return err
	}
	return store(w, k, Payment{PaymentAuthorized: pl, AuthorizedAt: ev.Timestamp})
}

// applyPaymentReceipt marks an x402 payment settled. A payment.settled with a
// mission_id is a reward, the missions model's.
func applyPaymentReceipt(w writer, ev *eventlog.Event) error {
	var pl events.PaymentReceipt
	if err := decodePayload(ev, &pl); err != nil {
		return err
	}
	if pl.Rail != events.RailX402 {
		return errNotOurs
	}
	pm, err := payment(w, pl.PaymentID)
	if err != nil {
		return err
	}
	if pm.Settled {
		return fmt.Errorf("payment %s is settled already", pl.PaymentID)
	}
	if err := add(w, key(snCount, "settled"), 1); err != nil {
		return err
	}
	tx := pl.Transaction
	pm.Settled, pm.Transaction = true, &tx
	return store(w, key(snPayment, pm.PaymentID), pm)
}

func payment(r reader, id string) (Payment, error) {
	var pm Payment
	ok, err := load(r, key(snPayment, id), &pm)
	if err != nil {
		return Payment{}, err
	}
	if !ok {
		return Payment{}, fmt.Errorf("unknown payment %q", id)
	}
	return pm, nil
}

// utcDay is the UTC date of an event timestamp, the day a daily limit counts.
func utcDay(ts string) (string, error) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", fmt.Errorf("timestamp %q: %w", ts, err)
	}
	return t.UTC().Format(time.DateOnly), nil
}
