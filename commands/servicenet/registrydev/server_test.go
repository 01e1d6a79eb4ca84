package registrydev

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// The stand-in is only worth following docs/servicenet.md against if the
// node's own registry client (package servicenet) works with it, and if it
// refuses what a registry refuses.

func standIn(t *testing.T) (*httptest.Server, *servicenet.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = New(Options{BaseURL: "http://" + srv.Listener.Addr().String()})
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, nodeClient(t, srv.URL, ed25519.NewKeyFromSeed(make([]byte, 32)), nil)
}

// nodeClient is the node's registry client for key; sign, when set, signs
// instead of key.
func nodeClient(t *testing.T, base string, key ed25519.PrivateKey, sign func([]byte) []byte) *servicenet.Client {
	t.Helper()
	if sign == nil {
		sign = func(m []byte) []byte { return ed25519.Sign(key, m) }
	}
	c, err := servicenet.New(servicenet.Config{BaseURL: base, NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign: sign, Retries: -1, CardTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStandInAgentsAndTasks(t *testing.T) {
	_, c := standIn(t)
	ctx := context.Background()
	agents, err := c.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range agents {
		ids = append(ids, a.AgentID)
	}
	if strings.Join(ids, " ") != "summarizer deep-research market-data calendar" {
		t.Fatalf("agents %v", ids)
	}
	card, err := c.Card(ctx, "summarizer")
	if err != nil || len(card.InputSchema) == 0 {
		t.Fatalf("summarizer card %+v, %v", card, err)
	}
	res, err := c.Invoke(ctx, "summarizer", servicenet.InvokeRequest{Message: "Summarise.",
		Input: json.RawMessage(`{"text":"One. Two. Three.","sentences":2}`)}, nil)
	if err != nil || res.Status != "completed" || string(res.Result) != `{"summary":"One. Two."}` {
		t.Fatalf("summarizer: %+v, %v", res, err)
	}
	res, err = c.Invoke(ctx, "deep-research", servicenet.InvokeRequest{Message: "Was it built?"}, nil)
	if err != nil || res.Status != "accepted" || res.TaskID == "" || res.ReceiptID == "" {
		t.Fatalf("deep-research: %+v, %v", res, err)
	}
	for _, want := range []string{"running", "completed"} {
		task, err := c.GetTask(ctx, "deep-research", res.TaskID)
		if err != nil || task.Status != want {
			t.Fatalf("task: %+v, %v; want %s", task, err, want)
		}
	}
	if _, err := c.GetTask(ctx, "deep-research", "task-999"); !isKind(err, servicenet.ErrNotFound) {
		t.Errorf("an unknown task: %v", err)
	}
}

func TestStandInChecksNodeSignature(t *testing.T) {
	srv, _ := standIn(t)
	resp, err := http.Get(srv.URL + "/v1/agents")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unsigned request: %d, want 401", resp.StatusCode)
	}
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	other := ed25519.NewKeyFromSeed([]byte("another node key, 32 bytes long!"))
	forged := nodeClient(t, srv.URL, key, func(m []byte) []byte { return ed25519.Sign(other, m) })
	var e *servicenet.Error
	if _, err := forged.ListAgents(context.Background()); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("a request signed by another key than its DID's: %v, want the registry's 401", err)
	}
}

func TestStandInVerifiesPayments(t *testing.T) {
	_, c := standIn(t)
	ctx := context.Background()
	in := servicenet.InvokeRequest{Message: "Quote ETH/USD."}
	_, err := c.Invoke(ctx, "market-data", in, nil)
	var e *servicenet.Error
	if !errors.As(err, &e) || e.Kind != servicenet.ErrPaymentRequired || e.Payment == nil {
		t.Fatalf("an unpaid invoke: %v, want 402 with the terms", err)
	}
	wallet, err := servicenet.NewEVMKey()
	if err != nil {
		t.Fatal(err)
	}
	pay := func(edit func(*servicenet.TransferAuthorization), nonce byte) servicenet.PaymentHeader {
		t.Helper()
		req, err := e.Payment.Select("eip155:84532")
		if err != nil {
			t.Fatal(err)
		}
		auth, err := servicenet.NewAuthorization(req, wallet.Address(), time.Now(), [32]byte{nonce})
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wallet.SignTransferAuthorization(ctx, auth)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil { // signed, then changed: the signature no longer covers it
			edit(&auth)
		}
		h, err := servicenet.PaymentHeaderFor(e.Payment, req, auth, sig)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := pay(nil, 1)
	res, err := c.Invoke(ctx, "market-data", in, &h)
	if err != nil || res.Status != "completed" || res.Settlement == nil || !res.Settlement.Success {
		t.Fatalf("a paid invoke: %+v, %v", res, err)
	}
	if !strings.EqualFold(res.Settlement.Payer, wallet.Address()) {
		t.Errorf("the receipt names payer %s, want %s", res.Settlement.Payer, wallet.Address())
	}
	if _, err := c.Invoke(ctx, "market-data", in, &h); !isKind(err, servicenet.ErrPaymentRequired) || !strings.Contains(err.Error(), "nonce already used") {
		t.Errorf("the same payment again: %v, want refused, its nonce spent", err)
	}
	other, err := servicenet.NewEVMKey()
	if err != nil {
		t.Fatal(err)
	}
	forged := pay(func(a *servicenet.TransferAuthorization) { a.From = other.Address() }, 2)
	if _, err := c.Invoke(ctx, "market-data", in, &forged); !isKind(err, servicenet.ErrPaymentRequired) || !strings.Contains(err.Error(), "signature is by") {
		t.Errorf("a payment whose from is not its signer: %v, want refused", err)
	}
}

func TestStandInOAuth(t *testing.T) {
	srv, c := standIn(t)
	ctx := context.Background()
	card, err := c.Card(ctx, "calendar")
	if err != nil {
		t.Fatal(err)
	}
	consent, err := servicenet.Consent(card)
	if err != nil || consent.AuthorizationURL != srv.URL+"/oauth/authorize" || consent.TokenURL != srv.URL+"/oauth/token" {
		t.Fatalf("consent %+v, %v", consent, err)
	}
	in := servicenet.InvokeRequest{Message: "Book a slot."}
	if _, err := c.Invoke(ctx, "calendar", in, nil); !isKind(err, servicenet.ErrRejected) {
		t.Errorf("without a token: %v, want the registry's 400", err)
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {"laptop"}, "redirect_uri": {"http://127.0.0.1:8765/cb"},
		"scope": {strings.Join(consent.Scopes, " ")}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, err := noRedirect.Get(consent.AuthorizationURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("state") != "s1" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	code := loc.Query().Get("code")
	token := func(form url.Values) (int, map[string]any) {
		t.Helper()
		resp, err := http.PostForm(consent.TokenURL, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, out
	}
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1:8765/cb"},
		"client_id": {"laptop"}, "code_verifier": {"not the verifier, but 43 characters long...."}}
	if status, out := token(exchange); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("a wrong verifier: %d %v", status, out)
	}
	// A code is good once, whatever the outcome: the failed exchange spent it.
	exchange.Set("code_verifier", verifier)
	if status, out := token(exchange); status != http.StatusBadRequest || out["error"] != "invalid_grant" {
		t.Errorf("a spent code: %d %v", status, out)
	}

	resp, err = noRedirect.Get(consent.AuthorizationURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ = url.Parse(resp.Header.Get("Location"))
	exchange.Set("code", loc.Query().Get("code"))
	status, out := token(exchange)
	access, _ := out["access_token"].(string)
	refresh, _ := out["refresh_token"].(string)
	if status != http.StatusOK || access == "" || refresh == "" {
		t.Fatalf("exchange: %d %v", status, out)
	}
	in.AuthToken = access
	res, err := c.Invoke(ctx, "calendar", in, nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("with the access token: %+v, %v", res, err)
	}
	if err != nil && strings.Contains(err.Error(), access) {
		t.Errorf("the error carries the token")
	}
	status, out = token(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"laptop"}})
	if next, _ := out["access_token"].(string); status != http.StatusOK || next == "" || next == access {
		t.Fatalf("refresh: %d %v", status, out)
	}
}

func isKind(err error, kind servicenet.ErrorKind) bool {
	var e *servicenet.Error
	return errors.As(err, &e) && e.Kind == kind
}
