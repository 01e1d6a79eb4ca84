package servicenettest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
)

// The fake is only worth its tests if it refuses what a registry refuses.

// pay402 asks agentID for its price and returns the terms, parsed by the
// node's own parser.
func pay402(t *testing.T, r *Registry, agentID string) *servicenet.PaymentRequired {
	t.Helper()
	resp, body := post(t, r.URL+"/v1/agents/"+agentID+"/invoke", `{"message":"x"}`, nil)
	if resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("unpaid invoke: %d %s", resp.StatusCode, body)
	}
	pr, err := servicenet.ParsePaymentRequired(resp.Header, body)
	if err != nil {
		t.Fatalf("the fake's 402 does not parse: %v", err)
	}
	return pr
}

func post(t *testing.T, url, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// signed builds a payment header for pr from w, at now, through the node's
// own x402 code; edit, if set, changes the decoded header before it is
// re-encoded.
func signed(t *testing.T, pr *servicenet.PaymentRequired, w servicenet.Wallet, now time.Time, nonce byte, edit func(map[string]any)) servicenet.PaymentHeader {
	t.Helper()
	req, err := pr.Select(pr.Accepts[0].Network)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := servicenet.NewAuthorization(req, w.Address(), now, [32]byte{nonce})
	if err != nil {
		t.Fatal(err)
	}
	sig, err := w.SignTransferAuthorization(context.Background(), auth)
	if err != nil {
		t.Fatal(err)
	}
	h, err := servicenet.PaymentHeaderFor(pr, req, auth, sig)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		raw, _ := base64.StdEncoding.DecodeString(h.Value)
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc)
		raw, _ = json.Marshal(doc)
		h.Value = base64.StdEncoding.EncodeToString(raw)
	}
	return h
}

func authorization(doc map[string]any) map[string]any {
	return doc["payload"].(map[string]any)["authorization"].(map[string]any)
}

func TestFakeVerifiesPayments(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			r := New(t, Options{})
			r.Add(Agent{ID: "paid", Price: &Price{Version: version}})
			pr := pay402(t, r, "paid")
			if pr.Version != version || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != "10000" {
				t.Fatalf("terms = %+v", pr)
			}
			payer, err := servicenet.NewEVMKey()
			if err != nil {
				t.Fatal(err)
			}
			other, _ := servicenet.NewEVMKey()
			now := time.Now()
			invoke := func(h servicenet.PaymentHeader) (*http.Response, []byte) {
				return post(t, r.URL+"/v1/agents/paid/invoke", `{"message":"x"}`, http.Header{h.Name: {h.Value}})
			}
			refused := func(name string, h servicenet.PaymentHeader) {
				t.Helper()
				before := len(r.Refusals())
				resp, body := invoke(h)
				if resp.StatusCode != http.StatusPaymentRequired || len(r.Refusals()) != before+1 {
					t.Errorf("%s: %d %s, refusals %v; want 402", name, resp.StatusCode, body, r.Refusals())
				}
			}
			refused("expired", signed(t, pr, payer, now.Add(-time.Hour), 1, nil))
			refused("not yet valid", signed(t, pr, payer, now.Add(time.Hour), 2, func(d map[string]any) {
				authorization(d)["validAfter"] = fmt.Sprint(now.Add(time.Hour).Unix())
			}))
			refused("from another payer", signed(t, pr, payer, now, 3, func(d map[string]any) {
				authorization(d)["from"] = other.Address()
			}))
			refused("value raised after signing", signed(t, pr, payer, now, 4, func(d map[string]any) {
				authorization(d)["value"] = "10001"
			}))
			refused("paid to another", signed(t, pr, payer, now, 5, func(d map[string]any) {
				authorization(d)["to"] = other.Address()
			}))
			refused("wrong version", signed(t, pr, payer, now, 6, func(d map[string]any) { d["x402Version"] = 3 - version }))
			refused("garbage", servicenet.PaymentHeader{Name: map[int]string{1: "X-PAYMENT", 2: "PAYMENT-SIGNATURE"}[version], Value: "%%%"})
			if len(r.Settlements()) != 0 {
				t.Fatalf("settled %+v", r.Settlements())
			}

			good := signed(t, pr, payer, now, 7, nil)
			resp, body := invoke(good)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("valid payment: %d %s, refusals %v", resp.StatusCode, body, r.Refusals())
			}
			st, err := servicenet.ParseSettlementResponse(resp.Header)
			if err != nil || st == nil || !st.Success || st.Payer != payer.Address() || !strings.HasPrefix(st.Transaction, "0x") {
				t.Errorf("receipt = %+v, %v", st, err)
			}
			if s := r.Settlements(); len(s) != 1 || s[0].Payer != payer.Address() || s[0].Value != "10000" {
				t.Errorf("settlements = %+v", s)
			}
			refused("replayed", good)
		})
	}
}

// recordingTB collects the fake's complaints instead of failing the test.
type recordingTB struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestFakeChecksNodeCredential(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	tb := &recordingTB{T: t}
	r := New(tb, Options{NodeKey: pub, NodeDID: "did:key:z6MkNode", Credential: "cred"})
	r.Add(Agent{ID: "a"})
	for _, c := range []struct {
		name string
		key  ed25519.PrivateKey
		cred string
		errs int
	}{{"right key", key, "cred", 0}, {"other key", otherKey, "cred", 1}, {"no credential", key, "", 1}} {
		client, err := servicenet.New(servicenet.Config{BaseURL: r.URL, Credential: c.cred, NodeDID: "did:key:z6MkNode",
			Sign: func(m []byte) []byte { return ed25519.Sign(c.key, m) }, Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		tb.errs = nil
		if _, err := client.Invoke(context.Background(), "a", servicenet.InvokeRequest{Message: "x"}, nil); err != nil {
			t.Fatal(err)
		}
		if len(tb.errs) != c.errs {
			t.Errorf("%s: complaints %q, want %d", c.name, tb.errs, c.errs)
		}
	}
}

func TestFakeAsyncAndFaults(t *testing.T) {
	r := New(t, Options{})
	r.Add(Agent{ID: "a", Async: &Async{RunningPolls: 2, Error: "boom"}, CardFault: &Fault{Status: 503, Times: 1}})
	_, body := post(t, r.URL+"/v1/agents/a/invoke", `{"message":"x"}`, nil)
	var acc map[string]string
	if err := json.Unmarshal(body, &acc); err != nil || acc["status"] != "accepted" || acc["task_id"] == "" || acc["receipt_id"] == "" {
		t.Fatalf("invoke = %s", body)
	}
	var statuses []string
	for range 4 {
		_, body := post(t, r.URL+"/v1/agents/a/tasks/"+acc["task_id"]+"/get", `{}`, nil)
		var task map[string]any
		if err := json.Unmarshal(body, &task); err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, fmt.Sprint(task["status"]))
	}
	if got := strings.Join(statuses, " "); got != "running running failed failed" {
		t.Errorf("statuses = %s", got)
	}
	for i, want := range []int{503, 200} {
		resp, err := http.Get(r.URL + "/v1/agents/a")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("card request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	resp, _ := post(t, r.URL+"/v1/agents/a%2Fb/invoke", `{"message":"x"}`, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a%%2Fb: %d", resp.StatusCode)
	}
	q := r.Requests()
	if last := q[len(q)-1]; last.Path != "/v1/agents/a%2Fb/invoke" || last.AgentID != "a/b" || !bytes.Contains(last.Body, []byte("message")) {
		t.Errorf("recorded %+v", last)
	}
}
