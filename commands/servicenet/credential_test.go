package servicenet

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestCredentialSigningBytes(t *testing.T) {
	// sha256("") and sha256("{}"), computed with sha256sum.
	for _, tc := range []struct {
		method, path, ts string
		body             []byte
		want             string
	}{
		{"GET", "/v1/agents", "2025-01-02T03:04:05Z", nil,
			"GET\n/v1/agents\n2025-01-02T03:04:05Z\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"POST", "/reg/v1/agents/a:b/tasks/t.1/get", "2025-01-02T03:04:05Z", []byte("{}"),
			"POST\n/reg/v1/agents/a:b/tasks/t.1/get\n2025-01-02T03:04:05Z\n44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	} {
		if got := string(SigningBytes(tc.method, tc.path, tc.ts, tc.body)); got != tc.want {
			t.Errorf("SigningBytes = %q, want %q", got, tc.want)
		}
	}
}

// TestCredentialOnEveryRequest: the fake registry verifies the bearer, the
// DID, the timestamp and the Ed25519 signature of every request it gets; here
// every call is made once, with a base path prefix, so the signed path must
// include it.
func TestCredentialOnEveryRequest(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case r.URL.Path == "/reg/v1/agents":
			writeJSON(w, 200, `{"agents":[]}`)
		case strings.HasSuffix(r.URL.Path, "/get"):
			writeJSON(w, 200, `{"task_id":"t1","status":"running"}`)
		case strings.HasSuffix(r.URL.Path, "/invoke"):
			writeJSON(w, 200, `{"status":"completed","result":{"ok":true}}`)
		default:
			writeJSON(w, 200, `{"agent_id":"a1","name":"A"}`)
		}
	})
	cfg := testConfig(f)
	cfg.BaseURL += "/reg/"
	c, _ := newTestClient(t, cfg)
	ctx := context.Background()
	if _, err := c.ListAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Card(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Invoke(ctx, "a1", InvokeRequest{Message: "m", AuthToken: "oauth-tok"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTask(ctx, "a1", "t1"); err != nil {
		t.Fatal(err)
	}
	reqs := f.seen()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("X-Node-Timestamp"); got != "2025-03-04T05:06:07Z" {
			t.Errorf("%s %s: timestamp %q, want the injected clock in whole seconds", r.Method, r.Path, got)
		}
	}
	if got := string(reqs[3].Body); got != "{}" {
		t.Errorf("get-task body %q, want {}", got)
	}
	if len(reqs[0].Body) != 0 || len(reqs[1].Body) != 0 {
		t.Error("a GET carried a body")
	}
}

func TestCredentialEmptySendsNoAuthorization(t *testing.T) {
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		writeJSON(w, 200, `{"agents":null}`)
	})
	f.wantCredential = ""
	cfg := testConfig(f)
	cfg.Credential = ""
	c, _ := newTestClient(t, cfg)
	list, err := c.ListAgents(context.Background())
	if err != nil || list == nil || len(list) != 0 {
		t.Fatalf("ListAgents = %#v, %v; want an empty list", list, err)
	}
	if _, ok := f.seen()[0].Header["Authorization"]; ok {
		t.Fatal("Authorization sent without a credential")
	}
}

// TestCredentialSecretsStayInTheirPlace: the OAuth token travels only in the
// invoke body; the node credential only in Authorization; neither appears in
// an error message, even when the registry echoes them.
func TestCredentialSecretsStayInTheirPlace(t *testing.T) {
	const token, payment = "oauth-secret-771", "cGF5bWVudC1zZWNyZXQ="
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		msg, _ := json.Marshal(map[string]string{"error": "bad token " + token + " for " + testCredential + " paying " + payment})
		writeJSON(w, 400, string(msg))
	})
	c, _ := newTestClient(t, testConfig(f))
	_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m", AuthToken: token},
		&PaymentHeader{Name: "X-PAYMENT", Value: payment})
	e := registryError(t, err, ErrRejected)
	for _, secret := range []string{token, testCredential, payment} {
		if strings.Contains(e.Error(), secret) {
			t.Errorf("message %q shows a secret", e.Error())
		}
	}
	if !strings.Contains(e.Message, "bad token [redacted]") {
		t.Errorf("message %q lost the registry's words", e.Message)
	}
	r := f.seen()[0]
	var sent map[string]any
	if err := json.Unmarshal(r.Body, &sent); err != nil || sent["auth_token"] != token || sent["message"] != "m" {
		t.Fatalf("invoke body %s does not carry the token", r.Body)
	}
	for name, values := range r.Header {
		for _, v := range values {
			if strings.Contains(v, token) {
				t.Errorf("header %s carries the OAuth token", name)
			}
			if strings.Contains(v, testCredential) && name != "Authorization" {
				t.Errorf("header %s carries the node credential", name)
			}
		}
	}
	if strings.Contains(r.Path, token) {
		t.Error("path carries the OAuth token")
	}
	if got := r.Header.Get("X-Payment"); got != payment {
		t.Errorf("X-PAYMENT = %q, want the payment", got)
	}
}

// TestCredentialNoRedirects: a redirect would resend the signed request,
// token and payment included, to wherever it points; the client stops.
func TestCredentialNoRedirects(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("redirect followed to %s", r.URL)
	}))
	t.Cleanup(elsewhere.Close)
	f := newFakeRegistry(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusTemporaryRedirect)
	})
	c, _ := newTestClient(t, testConfig(f))
	_, err := c.Invoke(context.Background(), "a1", InvokeRequest{Message: "m", AuthToken: "tok"}, nil)
	e := registryError(t, err, ErrMalformed)
	if e.Status != http.StatusTemporaryRedirect {
		t.Errorf("status %d, want 307", e.Status)
	}
}

func TestCredentialSignatureIsPaddedBase64OfSign(t *testing.T) {
	var gotMsg []byte
	c, err := New(Config{
		BaseURL: "https://registry.example/p",
		NodeDID: testNodeDID,
		Sign:    func(msg []byte) []byte { gotMsg = msg; return []byte{0xfb, 0xff} },
		Now:     func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", c.BaseURL()+"/v1/agents/a/invoke", nil)
	if err := c.authenticate(req, []byte("{}"), testNow); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("X-Node-Signature"); got != base64.StdEncoding.EncodeToString([]byte{0xfb, 0xff}) || got != "+/8=" {
		t.Errorf("signature header %q, want +/8=", got)
	}
	if want := SigningBytes("POST", "/p/v1/agents/a/invoke", "2025-03-04T05:06:07Z", []byte("{}")); !bytes.Equal(gotMsg, want) {
		t.Errorf("signed %q, want %q", gotMsg, want)
	}
	// A signer that gives nothing stops the request.
	c.sign = func([]byte) []byte { return nil }
	if err := c.authenticate(req, nil, testNow); err == nil {
		t.Error("empty signature accepted")
	}
}
