package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
)

// registryFront stands between the node and the fake registry and breaks
// invokes on the wire: it hangs until the node gives up, resets the
// connection (RST) before the registry sees the request, or forwards the
// request and resets the connection instead of relaying the registry's
// answer. Everything else it forwards.
type registryFront struct {
	target string
	mu     sync.Mutex
	fault  string // "", "hang", "reset" or "reset-after"
	paid   bool   // the fault hits the paid retry (X-PAYMENT), else the first invoke
}

func (f *registryFront) set(fault string, paid bool) {
	f.mu.Lock()
	f.fault, f.paid = fault, paid
	f.mu.Unlock()
}

func (f *registryFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fault, paid := f.fault, f.paid
	f.mu.Unlock()
	isPaid := r.Header.Get("X-PAYMENT") != "" || r.Header.Get("PAYMENT-SIGNATURE") != ""
	if !strings.HasSuffix(r.URL.Path, "/invoke") || isPaid != paid {
		fault = ""
	}
	switch fault {
	case "hang":
		// With the body read, the server notices the node hanging up.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(waitTimeout):
		}
		return
	case "reset":
		resetConn(w)
		return
	}
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, f.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if fault == "reset-after" {
		resetConn(w) // the registry has acted; its answer is lost
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// resetConn closes the client's connection with an RST (SO_LINGER 0).
func resetConn(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
}

// TestFaultRegistryMidInvoke: the registry hangs or resets the connection in
// the middle of an invoke, through the real HTTP server. A hang is 504
// registry_timeout and a reset 502 registry_unavailable, whether it hits the
// first invoke or the paid retry. Nothing is recorded for a call that failed
// before a payment; one that failed on the paid retry leaves exactly one
// payment.authorized and no payment.settled, however it failed. When the
// client repeats the call and it succeeds, that is a second authorization
// (another payment_id and nonce) settled once: no payment is ever recorded
// twice. If the registry acted before the connection broke (reset-after),
// the money moved once for the one authorization the chain holds.
func TestFaultRegistryMidInvoke(t *testing.T) {
	pub := faultKey.Public().(ed25519.PublicKey)
	reg := servicenettest.New(t, servicenettest.Options{NodeKey: pub, NodeDID: eventlog.DIDKey(pub)})
	reg.Add(servicenettest.Agent{ID: "free"})
	reg.Add(servicenettest.Agent{ID: "paid", Price: &servicenettest.Price{Version: 1}})
	front := &registryFront{target: reg.URL}
	fs := httptest.NewServer(front)
	t.Cleanup(fs.Close)
	// serve's client (openRegistry), with a read timeout short enough for a test.
	client, err := servicenet.New(servicenet.Config{BaseURL: fs.URL, NodeDID: eventlog.DIDKey(pub),
		Sign: func(m []byte) []byte { return ed25519.Sign(faultKey, m) }, ReadTimeout: 300 * time.Millisecond,
		Retries: localnode.RegistryReadRetries, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	n := newFaultNode(t, t.TempDir(), nil, client)
	if status, b := n.post(t, "/v1/admin/payment-accounts", `{"ref":"main"}`); status != http.StatusOK {
		t.Fatalf("create payment account: %d %s", status, b)
	}
	const settle = `,"settlement":{"layer":"web3","rail":"x402","request":{"protocol":"x402","payment_account_ref":"main","network":"base-sepolia"}}`
	invoke := func(agent string) (int, string) {
		body := `{"message":"hi"`
		if agent == "paid" {
			body += settle
		}
		status, b := n.post(t, "/v1/core/servicenet/agents/"+agent+"/invoke", body+"}")
		var e struct{ Code string }
		json.Unmarshal(b, &e)
		return status, e.Code
	}

	for _, c := range []struct {
		agent, fault string
		paid         bool // the fault hits the paid retry
		status       int
		code         string
		authorized   int // payment.authorized appended
		settledAtReg int // payments the registry settled
	}{
		{"free", "hang", false, http.StatusGatewayTimeout, "registry_timeout", 0, 0},
		{"free", "reset", false, http.StatusBadGateway, "registry_unavailable", 0, 0},
		{"paid", "hang", false, http.StatusGatewayTimeout, "registry_timeout", 0, 0},
		{"paid", "reset", false, http.StatusBadGateway, "registry_unavailable", 0, 0},
		{"paid", "hang", true, http.StatusGatewayTimeout, "registry_timeout", 1, 0},
		{"paid", "reset", true, http.StatusBadGateway, "registry_unavailable", 1, 0},
		{"paid", "reset-after", true, http.StatusBadGateway, "registry_unavailable", 1, 1},
	} {
		name := fmt.Sprintf("%s agent, %s on the %s invoke", c.agent, c.fault, map[bool]string{false: "first", true: "paid"}[c.paid])
		t.Run(name, func(t *testing.T) {
			settledBefore := len(reg.Settlements())
			from := n.core.Log.Tip().Seq
			front.set(c.fault, c.paid)
			status, code := invoke(c.agent)
			front.set("", false)
			if status != c.status || code != c.code {
				t.Fatalf("invoke: %d %s, want %d %s", status, code, c.status, c.code)
			}
			got := chainTypes(t, n, from)
			if len(got["payment.authorized"]) != c.authorized || len(got["payment.settled"]) != 0 || len(got["servicenet.invoked"]) != 0 {
				t.Fatalf("after the failed invoke the chain gained %v, want %d payment.authorized and nothing else", got, c.authorized)
			}
			if s := len(reg.Settlements()) - settledBefore; s != c.settledAtReg {
				t.Errorf("the registry settled %d payments, want %d", s, c.settledAtReg)
			}
			if c.agent != "paid" {
				return
			}
			// The client repeats the call on a healthy registry.
			from2 := n.core.Log.Tip().Seq
			if status, code := invoke(c.agent); status != http.StatusOK {
				t.Fatalf("the repeated invoke: %d %s", status, code)
			}
			again := chainTypes(t, n, from2)
			if len(again["payment.authorized"]) != 1 || len(again["payment.settled"]) != 1 || len(again["servicenet.invoked"]) != 1 ||
				again["payment.settled"][0] != again["payment.authorized"][0] {
				t.Fatalf("the repeated invoke appended %v, want one payment authorized, settled and invoked", again)
			}
			if len(got["payment.authorized"]) == 1 && got["payment.authorized"][0] == again["payment.authorized"][0] {
				t.Errorf("the repeat reused payment %s", got["payment.authorized"][0])
			}
			if s := len(reg.Settlements()) - settledBefore; s != c.settledAtReg+1 {
				t.Errorf("the registry settled %d payments over both calls, want %d", s, c.settledAtReg+1)
			}
		})
	}
	// Over every case, each payment_id is settled at most once.
	settled := map[string]int{}
	for _, id := range chainTypes(t, n, 0)["payment.settled"] {
		if settled[id]++; settled[id] > 1 {
			t.Errorf("payment %s settled twice", id)
		}
	}
}

// chainTypes returns, by type, the payment_id (or "") of each event after
// seq from.
func chainTypes(t *testing.T, n *faultNode, from uint64) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	err := n.core.Log.Scan(from+1, n.core.Log.Tip().Seq, func(ev *eventlog.Event) error {
		var p struct {
			PaymentID string `json:"payment_id"`
		}
		json.Unmarshal(ev.Payload, &p)
		got[ev.Type] = append(got[ev.Type], p.PaymentID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
