package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// paidInvoke is an invoke body paying from account ref on network.
func paidInvoke(ref, network string) func(*commands.InvokeInput) {
	return func(in *commands.InvokeInput) {
		in.Settlement = &commands.SettlementInput{Layer: ptr("web3"), Rail: ptr("x402"),
			Request: &commands.SettlementRequestInput{Protocol: ptr("x402"), PaymentAccountRef: ptr(ref), Network: ptr(network)}}
	}
}

// TestServicenetPaidInvoke: a 402 (v1 body, v2 header) is paid once from the
// account, the fake verifies the EIP-712 signature like a facilitator, and
// the chain records payment.authorized, servicenet.invoked and
// payment.settled with the registry's receipt.
func TestServicenetPaidInvoke(t *testing.T) {
	for _, c := range []struct {
		name    string
		price   servicenettest.Price
		network string // what the settlement names
		async   bool
	}{
		{"v1", servicenettest.Price{Version: 1}, "base-sepolia", false},
		{"v1 named by CAIP-2", servicenettest.Price{Version: 1}, "eip155:84532", false},
		{"v2", servicenettest.Price{Version: 2}, "eip155:84532", false},
		{"v2 async", servicenettest.Price{Version: 2, Amount: "1234567"}, "base-sepolia", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newSNNode(t, snConfig{})
			addr := n.account("main", "2000000", "5000000")
			a := servicenettest.Agent{ID: "paid", Price: &c.price}
			if c.async {
				a.Async = &servicenettest.Async{}
			}
			n.reg.Add(a)
			tip := n.log.Tip().Seq

			res, err := n.invoke("paid", `{"q":1}`, paidInvoke("main", c.network))
			if err != nil {
				t.Fatal(err)
			}
			wantStatus := "completed"
			if c.async {
				wantStatus = "accepted"
			}
			if res.Status != wantStatus || res.PaymentID == "" {
				t.Fatalf("result = %+v", res)
			}
			// The fake verified exactly one payment, signed by the account.
			st := n.reg.Settlements()
			if len(st) != 1 || !strings.EqualFold(st[0].Payer, addr) || st[0].Version != c.price.Version {
				t.Fatalf("settlements = %+v, refusals %v; want one by %s", st, n.reg.Refusals(), addr)
			}
			if n.reg.PaidAttempts() != 1 || n.keys.signs.Load() != 1 || len(n.reg.Refusals()) != 0 || n.reg.Count(servicenettest.RouteInvoke, "paid") != 2 {
				t.Errorf("paid attempts %d, refusals %v, invokes %d; want 1, none, 2",
					n.reg.PaidAttempts(), n.reg.Refusals(), n.reg.Count(servicenettest.RouteInvoke, "paid"))
			}
			// Both invokes carried the same request.
			if inv := n.reg.Invocations("paid"); len(inv) != 2 || string(inv[0].Input) != string(inv[1].Input) {
				t.Errorf("invocations = %+v", inv)
			}

			if got := n.types(tip); strings.Join(got, " ") != "payment.authorized servicenet.invoked payment.settled" {
				t.Fatalf("events = %v", got)
			}
			evs := n.events(tip)
			auth := payloadOf[events.PaymentAuthorized](t, evs[0])
			price := c.price
			amount := price.Amount
			if amount == "" {
				amount = "10000"
			}
			reqNetwork := "base-sepolia"
			if c.price.Version == 2 {
				reqNetwork = "eip155:84532"
			}
			if auth.PaymentID != res.PaymentID || auth.Rail != "x402" || auth.Scheme != "exact" || auth.X402Version != c.price.Version ||
				auth.AgentID != "paid" || auth.AuthorizedBy != n.log.NodeDID() || auth.AccountRef != "main" ||
				!strings.EqualFold(auth.Payer, addr) || !strings.EqualFold(auth.PayTo, servicenettest.MerchantAddress) ||
				!strings.EqualFold(auth.Asset, servicenettest.BaseSepoliaUSDC) || auth.Network != reqNetwork ||
				auth.Amount != amount || auth.Nonce != st[0].Nonce || auth.ValidBefore <= auth.ValidAfter {
				t.Errorf("payment.authorized = %+v\nsettled %+v", auth, st[0])
			}
			inv := payloadOf[events.ServicenetInvoked](t, evs[1])
			if inv.PaymentID == nil || *inv.PaymentID != res.PaymentID || inv.Status != wantStatus {
				t.Errorf("servicenet.invoked = %+v", inv)
			}
			rc := payloadOf[events.PaymentReceipt](t, evs[2])
			var receipt struct {
				Success     bool   `json:"success"`
				Transaction string `json:"transaction"`
				Network     string `json:"network"`
				Payer       string `json:"payer"`
			}
			if err := json.Unmarshal(rc.Receipt, &receipt); err != nil {
				t.Fatal(err)
			}
			if rc.PaymentID != res.PaymentID || rc.Rail != "x402" || !rc.Success || rc.Transaction != st[0].Transaction ||
				rc.AccountRef != "main" || rc.Amount != amount || !receipt.Success || receipt.Transaction != st[0].Transaction ||
				!strings.EqualFold(receipt.Payer, addr) {
				t.Errorf("payment.settled = %+v (receipt %s)", rc, rc.Receipt)
			}
			// The read model: the payment settled, counted against the day.
			pm, ok, err := n.core.Receipts.Payment(res.PaymentID)
			if err != nil || !ok || !pm.Settled || pm.Transaction == nil || *pm.Transaction != st[0].Transaction {
				t.Errorf("model payment = %+v %v %v", pm, ok, err)
			}
			day := strings.SplitN(evs[0].Timestamp, "T", 2)[0]
			if spent, err := n.core.Receipts.DaySpent("main", day); err != nil || spent.String() != amount {
				t.Errorf("day spent = %v %v, want %s", spent, err, amount)
			}
			if c.async {
				if _, err := n.sn.Receipt(context.Background(), owner, res.ReceiptID); err != nil {
					t.Fatal(err)
				}
				if got := n.ofType(tip, events.TypeServicenetTaskCompleted); len(got) != 1 {
					t.Errorf("task.completed events = %d", len(got))
				}
			}
			// Neither the signature nor the payment header is recorded.
			for _, q := range n.reg.Requests() {
				for _, h := range []string{"X-Payment", "Payment-Signature"} {
					if v := q.Header.Get(h); v != "" {
						n.noSecret(v)
					}
				}
			}
			// Every model folds the x402 events, or leaves them to the one whose they are.
			skipped, err := n.core.Skipped()
			if err != nil {
				t.Fatal(err)
			}
			for model, k := range skipped {
				if k != 0 {
					t.Errorf("model %s skipped %d events", model, k)
				}
			}
			if diff, err := n.log.RebuildModels(context.Background(), nil); err != nil || !diff.Same() {
				t.Errorf("the live models differ from a rebuild: %+v %v", diff, err)
			}
		})
	}
}

func TestServicenetSpendingLimits(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("small", "5000", "")
	n.account("daily", "", "15000")
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1, Amount: "10000"}})
	tip := n.log.Tip().Seq

	// Over max_per_payment: refused before anything is signed or recorded.
	_, err := n.invoke("paid", "", paidInvoke("small", "base-sepolia"))
	ce := n.refused(err, tip, commands.KindForbidden, "spending_limit", "settlement.request.payment_account_ref")
	if ce.Details["limit"] != "max_per_payment" || ce.Details["amount"] != "10000" || ce.Details["max"] != "5000" {
		t.Errorf("details = %v", ce.Details)
	}
	if n.reg.PaidAttempts() != 0 || n.keys.signs.Load() != 0 {
		t.Errorf("a payment was signed (%d) or reached the registry (%d)", n.keys.signs.Load(), n.reg.PaidAttempts())
	}

	// max_per_day: the first payment fits, the second would pass the day's limit.
	if _, err := n.invoke("paid", "", paidInvoke("daily", "base-sepolia")); err != nil {
		t.Fatal(err)
	}
	tip = n.log.Tip().Seq
	_, err = n.invoke("paid", "", paidInvoke("daily", "base-sepolia"))
	ce = n.refused(err, tip, commands.KindForbidden, "spending_limit", "settlement.request.payment_account_ref")
	if ce.Details["limit"] != "max_per_day" || ce.Details["max"] != "15000" {
		t.Errorf("details = %v", ce.Details)
	}
	if n.reg.PaidAttempts() != 1 || len(n.reg.Settlements()) != 1 || n.keys.signs.Load() != 1 {
		t.Errorf("paid attempts %d, settlements %d; want 1 and 1", n.reg.PaidAttempts(), len(n.reg.Settlements()))
	}
	if got := len(n.ofType(0, events.TypePaymentAuthorized)); got != 1 {
		t.Errorf("payment.authorized events = %d, want 1", got)
	}
	// Another account is not held to daily's spending.
	n.account("other", "", "15000")
	if _, err := n.invoke("paid", "", paidInvoke("other", "base-sepolia")); err != nil {
		t.Fatal(err)
	}
}

// TestServicenetPaymentMismatch: a 402 the settlement cannot pay, or one that
// asks for another asset than the card advertised, is refused unsigned.
func TestServicenetPaymentMismatch(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("main", "", "")
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2}})
	tip := n.log.Tip().Seq
	_, err := n.invoke("paid", "", paidInvoke("main", "base"))
	n.refused(err, tip, commands.KindInvalid, "network_not_accepted", "settlement.request.network")

	pricing, _ := json.Marshal(map[string]string{"asset": "0x0000000000000000000000000000000000000001", "network": "eip155:84532"})
	n.reg.Update("paid", func(a *servicenettest.Agent) { a.Pricing = pricing })
	_, err = n.invoke("paid", "", paidInvoke("main", "base-sepolia"))
	n.refused(err, tip, commands.KindUpstream, "payment_mismatch", "")
	if n.reg.PaidAttempts() != 0 || n.keys.signs.Load() != 0 {
		t.Errorf("a payment was sent")
	}

	// A registry that refuses a valid payment: the authorization is recorded
	// (it was signed and counts against the day), nothing else.
	n.reg.Update("paid", func(a *servicenettest.Agent) {
		a.Pricing = nil
		a.Price.Refuse = "insufficient_funds"
	})
	_, err = n.invoke("paid", "", paidInvoke("main", "base-sepolia"))
	var ce *commands.Error
	if !errors.As(err, &ce) || ce.Kind != commands.KindUpstream || ce.Code != "payment_refused" {
		t.Fatalf("err = %v, want payment_refused", err)
	}
	if got := n.types(tip); strings.Join(got, " ") != "payment.authorized" {
		t.Errorf("events = %v, want the authorization only", got)
	}
	if n.reg.PaidAttempts() != 1 {
		t.Errorf("paid attempts = %d, want exactly one retry", n.reg.PaidAttempts())
	}

	// A paid answer without a receipt: invoked, no payment.settled.
	n.reg.Update("paid", func(a *servicenettest.Agent) { a.Price.Refuse, a.Price.NoReceipt = "", true })
	tip = n.log.Tip().Seq
	if _, err := n.invoke("paid", "", paidInvoke("main", "base-sepolia")); err != nil {
		t.Fatal(err)
	}
	if got := n.types(tip); strings.Join(got, " ") != "payment.authorized servicenet.invoked" {
		t.Errorf("events = %v", got)
	}
}

// TestServicenetPaymentAccounts: creating accounts, their records and audit.
func TestServicenetPaymentAccounts(t *testing.T) {
	n := newSNNode(t, snConfig{onDisk: true})
	addr := n.account("main", "100", "1000")
	for _, c := range []struct {
		in          commands.CreatePaymentAccountInput
		actor       commands.Actor
		kind        commands.Kind
		code, field string
	}{
		{commands.CreatePaymentAccountInput{Ref: ptr("main")}, owner, commands.KindConflict, "payment_account_exists", "ref"},
		{commands.CreatePaymentAccountInput{}, owner, commands.KindInvalid, "missing_field", "ref"},
		{commands.CreatePaymentAccountInput{Ref: ptr("../x")}, owner, commands.KindInvalid, "invalid_field", "ref"},
		{commands.CreatePaymentAccountInput{Ref: ptr("Main")}, owner, commands.KindInvalid, "invalid_field", "ref"},
		{commands.CreatePaymentAccountInput{Ref: ptr("b"), MaxPerPayment: ptr("-1")}, owner, commands.KindInvalid, "invalid_field", "max_per_payment"},
		{commands.CreatePaymentAccountInput{Ref: ptr("b"), MaxPerDay: ptr("1e6")}, owner, commands.KindInvalid, "invalid_field", "max_per_day"},
		{commands.CreatePaymentAccountInput{Ref: ptr("b"), MaxPerDay: ptr("007")}, owner, commands.KindInvalid, "invalid_field", "max_per_day"},
		{commands.CreatePaymentAccountInput{Ref: ptr("b")}, agentActor("did:key:z6MkAgent"), commands.KindForbidden, "forbidden", ""},
		{commands.CreatePaymentAccountInput{Ref: ptr("b")}, observer, commands.KindForbidden, "forbidden", ""},
	} {
		_, err := n.core.PaymentAccounts.Create(context.Background(), c.actor, "x", c.in)
		n.refused(err, n.log.Tip().Seq, c.kind, c.code, c.field)
	}
	n.restart()
	accts := n.core.PaymentAccounts.List()
	if len(accts) != 1 || accts[0].Ref != "main" || accts[0].Address != addr ||
		accts[0].MaxPerPayment.Cmp(big.NewInt(100)) != 0 || accts[0].MaxPerDay.Cmp(big.NewInt(1000)) != 0 {
		t.Errorf("accounts after restart = %+v", accts)
	}
	audit, err := n.log.AuditEntries(eventlog.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var created int
	for _, e := range audit {
		if e.Action == "payment_account.created" {
			created++
			if !strings.Contains(string(e.Detail), addr) {
				t.Errorf("audit detail %s", e.Detail)
			}
		}
	}
	if created != 1 {
		t.Errorf("payment_account.created entries = %d", created)
	}
	// The key is in its 0600 file and nowhere else.
	key, err := os.ReadFile(filepath.Join(n.keyDir, "main.key"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(n.keyDir, "main.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v %v", fi.Mode(), err)
	}
	n.noSecret(strings.TrimSpace(string(key)))
}

// TestServicenetDailyLimitUnderConcurrency: payments racing for one account's
// day are checked one after another, so no more pass than the limit allows.
func TestServicenetDailyLimitUnderConcurrency(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("daily", "", "30000") // three payments of 10000
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2, Amount: "10000"}})
	const calls = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	for range calls {
		wg.Go(func() {
			_, err := n.invoke("paid", "", paidInvoke("daily", "eip155:84532"))
			code := "ok"
			var ce *commands.Error
			if errors.As(err, &ce) {
				code = ce.Code
			} else if err != nil {
				code = err.Error()
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes["ok"] != 3 || codes["spending_limit"] != calls-3 {
		t.Errorf("outcomes = %v, want 3 ok and %d spending_limit", codes, calls-3)
	}
	if got := len(n.ofType(0, events.TypePaymentAuthorized)); got != 3 {
		t.Errorf("payment.authorized = %d, want 3", got)
	}
	if got := len(n.reg.Settlements()); got != 3 || n.reg.PaidAttempts() != 3 || n.keys.signs.Load() != 3 {
		t.Errorf("settlements %d, paid attempts %d; want 3 and 3", got, n.reg.PaidAttempts())
	}
}

// cancelAfterInvoke is the registry client, but the caller's context ends
// the moment an invoke's answer is in: a client that hangs up just then.
type cancelAfterInvoke struct {
	commands.Registry
	cancel context.CancelFunc
}

func (c cancelAfterInvoke) Invoke(ctx context.Context, agentID string, req servicenet.InvokeRequest, p *servicenet.PaymentHeader) (servicenet.InvokeResponse, error) {
	resp, err := c.Registry.Invoke(ctx, agentID, req, p)
	if err == nil {
		c.cancel()
	}
	return resp, err
}

// TestServicenetAcceptedCallIsRecordedWhenCallerLeaves: what the registry
// accepted (and was paid for) is recorded even when the caller has gone by
// the time its answer arrives, so its receipt still resolves.
func TestServicenetAcceptedCallIsRecordedWhenCallerLeaves(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := newSNNode(t, snConfig{wrap: func(r commands.Registry) commands.Registry { return cancelAfterInvoke{r, cancel} }})
	n.account("main", "", "")
	n.reg.Add(servicenettest.Agent{ID: "paid", Async: &servicenettest.Async{}, Price: &servicenettest.Price{Version: 1}})
	tip := n.log.Tip().Seq
	in := commands.InvokeInput{Message: ptr("x")}
	paidInvoke("main", "base-sepolia")(&in)
	_, _ = n.sn.Invoke(ctx, owner, "paid", in)
	if got := n.types(tip); strings.Join(got, " ") != "payment.authorized servicenet.invoked payment.settled" {
		t.Errorf("events = %v; the registry accepted and was paid (settlements %d)", got, len(n.reg.Settlements()))
	}
}

// TestServicenetPaymentValidityBound: a requirement whose maxTimeoutSeconds
// is beyond servicenet.MaxValiditySeconds is a registry answer outside the
// contract: 502 registry_bad_response, nothing signed, nothing appended,
// nothing counted against the day, so an honest payment after it still fits.
func TestServicenetPaymentValidityBound(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("daily", "", "15000") // one payment of 10000 a day
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2, Amount: "10000"}})
	tip := n.log.Tip().Seq
	for _, timeout := range []int64{math.MaxInt64, 1_000_000_000_000, servicenet.MaxValiditySeconds + 1} {
		n.reg.Update("paid", func(a *servicenettest.Agent) { a.Price.MaxTimeoutSeconds = timeout })
		_, err := n.invoke("paid", "", paidInvoke("daily", "base-sepolia"))
		ce := n.refused(err, tip, commands.KindUpstream, "registry_bad_response", "")
		if !strings.Contains(ce.Message, "maxTimeoutSeconds") {
			t.Errorf("maxTimeoutSeconds %d: message %q does not name maxTimeoutSeconds", timeout, ce.Message)
		}
	}
	if n.keys.signs.Load() != 0 || n.reg.PaidAttempts() != 0 {
		t.Errorf("signed %d, paid attempts %d; want none", n.keys.signs.Load(), n.reg.PaidAttempts())
	}
	spent, err := n.core.Receipts.DaySpent("daily", time.Now().UTC().Format(time.DateOnly))
	if err != nil || spent.Sign() != 0 {
		t.Errorf("day spent = %v, %v; want 0", spent, err)
	}

	// The bound itself is accepted, and the honest payment fits the day.
	n.reg.Update("paid", func(a *servicenettest.Agent) { a.Price.MaxTimeoutSeconds = servicenet.MaxValiditySeconds })
	before := time.Now().Unix()
	if _, err := n.invoke("paid", "", paidInvoke("daily", "base-sepolia")); err != nil {
		t.Fatalf("an honest payment after the refused challenges: %v", err)
	}
	auths := n.ofType(tip, events.TypePaymentAuthorized)
	if len(auths) != 1 {
		t.Fatalf("payment.authorized = %d, want 1", len(auths))
	}
	pa := payloadOf[events.PaymentAuthorized](t, auths[0])
	if d := pa.ValidBefore - before; d < servicenet.MaxValiditySeconds || d > servicenet.MaxValiditySeconds+5 {
		t.Errorf("valid_before = now + %d, want now + %d", d, servicenet.MaxValiditySeconds)
	}
}

// TestServicenetUnsignedPaymentNotRecorded: payment.authorized is appended
// only once the signature exists, so a signer that fails leaves nothing in
// the chain and nothing counted against the day.
func TestServicenetUnsignedPaymentNotRecorded(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("daily", "", "10000")
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1, Amount: "10000"}})
	tip := n.log.Tip().Seq
	n.keys.fail.Store(true)
	for range 2 {
		if _, err := n.invoke("paid", "", paidInvoke("daily", "base-sepolia")); err == nil {
			t.Fatal("a payment whose signing failed succeeded")
		}
		if got := n.types(tip); len(got) != 0 {
			t.Fatalf("a payment that was never signed appended %v", got)
		}
	}
	n.keys.fail.Store(false)
	if _, err := n.invoke("paid", "", paidInvoke("daily", "base-sepolia")); err != nil {
		t.Fatalf("the signed payment after the failures: %v", err)
	}
	if got := strings.Join(n.types(tip), " "); got != "payment.authorized servicenet.invoked payment.settled" {
		t.Errorf("events = %s", got)
	}
}

// TestServicenetPaymentHeldToTheCard: a 402 that pays another address than
// the card's pricing names, or asks more than its amount, is 502
// payment_mismatch; one that asks to be paid 0 is 502 registry_bad_response.
// Nothing is signed or appended.
func TestServicenetPaymentHeldToTheCard(t *testing.T) {
	n := newSNNode(t, snConfig{})
	n.account("main", "", "")
	n.reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 2, Amount: "10000"}})
	tip := n.log.Tip().Seq
	pricing := func(members string) json.RawMessage {
		return json.RawMessage(`{"currency":"USDC","rail":"x402","network":"eip155:84532","asset":"` + servicenettest.BaseSepoliaUSDC + `"` + members + `}`)
	}
	for _, c := range []struct {
		name    string
		pricing json.RawMessage
		amount  string
		code    string
	}{
		{"another payTo", pricing(`,"amount":"10000","payTo":"0x0000000000000000000000000000000000000001"`), "10000", "payment_mismatch"},
		{"another pay_to", pricing(`,"amount":"10000","pay_to":"0x0000000000000000000000000000000000000001"`), "10000", "payment_mismatch"},
		{"more than the card's amount", pricing(`,"amount":"10000"`), "10001", "payment_mismatch"},
		{"a zero amount", nil, "0", "registry_bad_response"},
	} {
		n.reg.Update("paid", func(a *servicenettest.Agent) { a.Pricing, a.Price.Amount = c.pricing, c.amount })
		_, err := n.invoke("paid", "", paidInvoke("main", "base-sepolia"))
		ce := n.refused(err, tip, commands.KindUpstream, c.code, "")
		if !strings.Contains(ce.Message, "nothing was signed") {
			t.Errorf("%s: message %q", c.name, ce.Message)
		}
	}
	if n.keys.signs.Load() != 0 || n.reg.PaidAttempts() != 0 {
		t.Errorf("signed %d, paid attempts %d; want none", n.keys.signs.Load(), n.reg.PaidAttempts())
	}
	// The card's own payTo, in another case, and a price below the card's
	// are paid.
	for _, c := range []struct{ pricing, amount string }{
		{`,"amount":"10000","payTo":"` + strings.ToLower(servicenettest.MerchantAddress) + `"`, "10000"},
		{`,"amount":"10000"`, "9000"},
	} {
		n.reg.Update("paid", func(a *servicenettest.Agent) { a.Pricing, a.Price.Amount = pricing(c.pricing), c.amount })
		if _, err := n.invoke("paid", "", paidInvoke("main", "base-sepolia")); err != nil {
			t.Errorf("pricing %s, amount %s: %v", c.pricing, c.amount, err)
		}
	}
}
