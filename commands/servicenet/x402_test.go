package servicenet

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Requirements in the shapes of the x402 specification's examples.
const (
	v1Requirement = `{"scheme":"exact","network":"base-sepolia","maxAmountRequired":"10000",` +
		`"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C",` +
		`"resource":"https://registry.test/v1/agents/a/invoke","description":"an agent","mimeType":"application/json",` +
		`"outputSchema":null,"maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}`
	v2Requirement = `{"scheme":"exact","network":"eip155:84532","amount":"10000",` +
		`"asset":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C",` +
		`"maxTimeoutSeconds":60,"extra":{"name":"USDC","version":"2"}}`
	v2Resource = `{"url":"https://registry.test/v1/agents/a/invoke","description":"an agent","mimeType":"application/json"}`
)

func v1Body(accepts ...string) []byte {
	return []byte(`{"x402Version":1,"error":"payment required","accepts":[` + strings.Join(accepts, ",") + `]}`)
}

func v2Doc(accepts ...string) string {
	return `{"x402Version":2,"error":"PAYMENT-SIGNATURE header is required","resource":` + v2Resource +
		`,"accepts":[` + strings.Join(accepts, ",") + `]}`
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func headerWith(name, value string) http.Header {
	h := http.Header{}
	h.Set(name, value)
	return h
}

// withMember returns the requirement JSON with one member set (or removed
// when value is "").
func withMember(t *testing.T, req, name, value string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(req), &m); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(m, name)
	} else {
		m[name] = json.RawMessage(value)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParsePaymentRequired(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		body   []byte
		want   *PaymentRequired // Raw and Resource checked apart
	}{
		{
			name: "v1 body",
			body: v1Body(v1Requirement),
			want: &PaymentRequired{Version: 1, Error: "payment required", Accepts: []Requirement{{
				Scheme: "exact", Network: "base-sepolia", Amount: "10000",
				Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
				Resource: "https://registry.test/v1/agents/a/invoke", Description: "an agent", MimeType: "application/json",
				MaxTimeoutSeconds: 60, Extra: json.RawMessage(`{"name":"USDC","version":"2"}`),
			}}},
		},
		{
			name:   "v2 header",
			header: headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement))),
			body:   []byte(`{}`),
			want: &PaymentRequired{Version: 2, Error: "PAYMENT-SIGNATURE header is required", Accepts: []Requirement{{
				Scheme: "exact", Network: "eip155:84532", Amount: "10000",
				Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
				Resource: "https://registry.test/v1/agents/a/invoke", Description: "an agent", MimeType: "application/json",
				MaxTimeoutSeconds: 60, Extra: json.RawMessage(`{"name":"USDC","version":"2"}`),
			}}},
		},
		{
			name:   "v2 header without padding, lower-case name",
			header: http.Header{"Payment-Required": {strings.TrimRight(b64(v2Doc(v2Requirement)), "=")}},
			want: &PaymentRequired{Version: 2, Error: "PAYMENT-SIGNATURE header is required", Accepts: []Requirement{{
				Scheme: "exact", Network: "eip155:84532", Amount: "10000",
				Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
				Resource: "https://registry.test/v1/agents/a/invoke", Description: "an agent", MimeType: "application/json",
				MaxTimeoutSeconds: 60, Extra: json.RawMessage(`{"name":"USDC","version":"2"}`),
			}}},
		},
		{
			name:   "both: the v2 header wins",
			header: headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement))),
			body:   v1Body(v1Requirement),
			want: &PaymentRequired{Version: 2, Error: "PAYMENT-SIGNATURE header is required", Accepts: []Requirement{{
				Scheme: "exact", Network: "eip155:84532", Amount: "10000",
				Asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
				Resource: "https://registry.test/v1/agents/a/invoke", Description: "an agent", MimeType: "application/json",
				MaxTimeoutSeconds: 60, Extra: json.RawMessage(`{"name":"USDC","version":"2"}`),
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePaymentRequired(tt.header, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Accepts) != len(tt.want.Accepts) {
				t.Fatalf("accepts: got %d, want %d", len(got.Accepts), len(tt.want.Accepts))
			}
			for i := range got.Accepts {
				if len(got.Accepts[i].Raw) == 0 {
					t.Errorf("accepts[%d]: no Raw", i)
				}
				got.Accepts[i].Raw = nil
			}
			if tt.want.Version == 2 {
				assertJSONEqual(t, got.Resource, []byte(v2Resource))
			} else if got.Resource != nil {
				t.Errorf("v1 Resource = %s, want none", got.Resource)
			}
			got.Resource = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParsePaymentRequiredKeepsRaw(t *testing.T) {
	second := withMember(t, v1Requirement, "network", `"base"`)
	p, err := ParsePaymentRequired(http.Header{}, v1Body(v1Requirement, second))
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Accepts[0].Raw) != v1Requirement || string(p.Accepts[1].Raw) != second {
		t.Errorf("Raw not the bytes sent:\n%s\n%s", p.Accepts[0].Raw, p.Accepts[1].Raw)
	}
	h := headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement)))
	p, err = ParsePaymentRequired(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Accepts[0].Raw) != v2Requirement {
		t.Errorf("v2 Raw = %s", p.Accepts[0].Raw)
	}
}

func TestParsePaymentRequiredMalformed(t *testing.T) {
	v1 := func(req string) []byte { return v1Body(req) }
	tests := []struct {
		name    string
		header  http.Header
		body    []byte
		wantErr string
	}{
		{"empty body", nil, nil, "decode JSON"},
		{"body not JSON", nil, []byte(`payment required`), "decode JSON"},
		{"header bad base64", headerWith("PAYMENT-REQUIRED", "!!!not base64!!!"), v1Body(v1Requirement), "base64"},
		{"header not JSON", headerWith("PAYMENT-REQUIRED", b64("not json")), nil, "JSON"},
		{"header JSON array", headerWith("PAYMENT-REQUIRED", b64(`[1]`)), nil, "JSON"},
		{"header truncated JSON", headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement)[:40])), nil, "JSON"},
		{"no version", nil, []byte(`{"accepts":[` + v1Requirement + `]}`), "x402Version"},
		{"unknown version", nil, []byte(`{"x402Version":3,"accepts":[` + v1Requirement + `]}`), "unknown x402Version 3"},
		{"version not a number", nil, []byte(`{"x402Version":"1","accepts":[` + v1Requirement + `]}`), "decode JSON"},
		{"v2 document in the body", nil, []byte(v2Doc(v2Requirement)), "PAYMENT-REQUIRED header"},
		{"v1 document in the header", headerWith("PAYMENT-REQUIRED", b64(string(v1Body(v1Requirement)))), nil, "x402Version 1"},
		{"empty accepts", nil, v1Body(), "empty accepts"},
		{"no accepts", nil, []byte(`{"x402Version":1}`), "empty accepts"},
		{"accepts not an array", nil, []byte(`{"x402Version":1,"accepts":{}}`), "decode JSON"},
		{"requirement not an object", nil, v1Body(`"exact"`), "accepts[0]"},
		{"missing scheme", nil, v1(withMember(t, v1Requirement, "scheme", "")), "missing scheme"},
		{"missing network", nil, v1(withMember(t, v1Requirement, "network", `""`)), "missing network"},
		{"missing asset", nil, v1(withMember(t, v1Requirement, "asset", "")), "missing asset"},
		{"missing payTo", nil, v1(withMember(t, v1Requirement, "payTo", "")), "missing payTo"},
		{"v1 missing maxAmountRequired", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", "")), "missing maxAmountRequired"},
		{"v1 with amount instead", nil, v1(withMember(t, withMember(t, v1Requirement, "maxAmountRequired", ""), "amount", `"1"`)), "missing maxAmountRequired"},
		{"v2 missing amount", headerWith("PAYMENT-REQUIRED", b64(v2Doc(withMember(t, v2Requirement, "amount", "")))), nil, "missing amount"},
		{"negative amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `"-1"`)), "non-negative decimal integer"},
		{"fractional amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `"1.5"`)), "non-negative decimal integer"},
		{"exponent amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `"1e6"`)), "non-negative decimal integer"},
		{"hex amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `"0x10"`)), "non-negative decimal integer"},
		{"empty amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `""`)), "non-negative decimal integer"},
		{"spaced amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `" 10"`)), "non-negative decimal integer"},
		{"numeric amount", nil, v1(withMember(t, v1Requirement, "maxAmountRequired", `10000`)), "decode JSON"},
		{"amount over uint256", nil, v1(withMember(t, v1Requirement, "maxAmountRequired",
			`"`+new(big.Int).Lsh(big.NewInt(1), 256).String()+`"`)), "exceeds uint256"},
		{"negative timeout", nil, v1(withMember(t, v1Requirement, "maxTimeoutSeconds", `-1`)), "negative"},
		{"timeout beyond the bound", nil, v1(withMember(t, v1Requirement, "maxTimeoutSeconds", `3601`)), "beyond the 3600 seconds"},
		{"timeout of 2^63-1", nil, v1(withMember(t, v1Requirement, "maxTimeoutSeconds", `9223372036854775807`)), "beyond the 3600 seconds"},
		{"timeout past int64", nil, v1(withMember(t, v1Requirement, "maxTimeoutSeconds", `1e30`)), "decode JSON"},
		{"v2 resource not an object", headerWith("PAYMENT-REQUIRED",
			b64(`{"x402Version":2,"resource":"x","accepts":[`+v2Requirement+`]}`)), nil, "resource"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePaymentRequired(tt.header, tt.body)
			if err == nil {
				t.Fatalf("no error; got %+v", p)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	upto := withMember(t, v2Requirement, "scheme", `"upto"`)
	permit2 := withMember(t, v2Requirement, "extra", `{"name":"USDC","version":"2","assetTransferMethod":"permit2"}`)
	eip3009 := withMember(t, withMember(t, v2Requirement, "extra", `{"name":"USDC","version":"2","assetTransferMethod":"eip3009"}`), "amount", `"7"`)
	mainnet := withMember(t, withMember(t, v2Requirement, "network", `"eip155:8453"`), "amount", `"20000"`)
	solana := withMember(t, withMember(t, v2Requirement, "network", `"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"`), "amount", `"30000"`)
	v1base := withMember(t, withMember(t, v1Requirement, "network", `"base"`), "maxAmountRequired", `"40000"`)

	v2 := func(accepts ...string) *PaymentRequired {
		p, err := ParsePaymentRequired(headerWith("PAYMENT-REQUIRED", b64(v2Doc(accepts...))), nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	v1 := func(accepts ...string) *PaymentRequired {
		p, err := ParsePaymentRequired(nil, v1Body(accepts...))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name       string
		p          *PaymentRequired
		network    string
		wantAmount string // "" for no match
	}{
		{"CAIP-2 asked, CAIP-2 offered", v2(v2Requirement), "eip155:84532", "10000"},
		{"v1 name asked, CAIP-2 offered", v2(v2Requirement), "base-sepolia", "10000"},
		{"CAIP-2 asked, v1 name offered", v1(v1Requirement), "eip155:84532", "10000"},
		{"v1 name asked, v1 name offered", v1(v1base, v1Requirement), "base", "40000"},
		{"first match wins", v2(mainnet, v2Requirement, withMember(t, v2Requirement, "amount", `"1"`)), "base-sepolia", "10000"},
		{"other scheme skipped", v2(upto, v2Requirement), "eip155:84532", "10000"},
		{"permit2 skipped, eip3009 taken", v2(permit2, eip3009), "eip155:84532", "7"},
		{"non-EVM by name", v2(mainnet, solana), "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "30000"},
		{"no match: other chain", v2(mainnet, solana), "base-sepolia", ""},
		{"no match: only permit2", v2(permit2), "base-sepolia", ""},
		{"no match: only upto", v2(upto), "base-sepolia", ""},
		{"no match: unknown network", v2(v2Requirement), "eip155:1", ""},
		{"no match: not a network", v2(v2Requirement), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.p.Select(tt.network)
			if tt.wantAmount == "" {
				if err == nil {
					t.Fatalf("selected %+v", r)
				}
				if !errors.Is(err, ErrNoAcceptablePayment) {
					t.Errorf("error %v is not ErrNoAcceptablePayment", err)
				}
				for _, a := range tt.p.Accepts {
					if !strings.Contains(err.Error(), a.Network) {
						t.Errorf("error %q does not name offered network %s", err, a.Network)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Amount != tt.wantAmount {
				t.Errorf("selected amount %s, want %s", r.Amount, tt.wantAmount)
			}
		})
	}
}

func TestChainID(t *testing.T) {
	tests := []struct {
		network string
		want    int64 // 0: error
	}{
		{"base", 8453},
		{"base-sepolia", 84532},
		{"ethereum", 1},
		{"sepolia", 11155111},
		{"polygon", 137},
		{"polygon-amoy", 80002},
		{"avalanche", 43114},
		{"avalanche-fuji", 43113},
		{"eip155:8453", 8453},
		{"eip155:1", 1},
		{"eip155:324705682", 324705682},
		{"eip155:", 0},
		{"eip155:0", 0},
		{"eip155:01", 0},
		{"eip155:-1", 0},
		{"eip155:8453 ", 0},
		{"eip155:0x2105", 0},
		{"eip155:123456789012345678901234567890123", 0},
		{"Base", 0},
		{"solana", 0},
		{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", 0},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.network, func(t *testing.T) {
			got, err := ChainID(tt.network)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("ChainID = %v, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Int64() != tt.want {
				t.Errorf("ChainID = %v, want %d", got, tt.want)
			}
		})
	}
	// A caller that changes the result must not change the table.
	id, _ := ChainID("base")
	id.SetInt64(1)
	if again, _ := ChainID("base"); again.Int64() != 8453 {
		t.Error("ChainID shares its result")
	}
}

func mustRequirement(t *testing.T, p *PaymentRequired, network string) Requirement {
	t.Helper()
	r, err := p.Select(network)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const testPayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"

func TestNewAuthorization(t *testing.T) {
	now := time.Unix(1_740_672_149, 0)
	nonce := [32]byte{1, 2, 3}
	p, err := ParsePaymentRequired(nil, v1Body(v1Requirement))
	if err != nil {
		t.Fatal(err)
	}
	req := mustRequirement(t, p, "base-sepolia")
	// The payer's address in lower case comes out checksummed.
	a, err := NewAuthorization(req, strings.ToLower(testPayer), now, nonce)
	if err != nil {
		t.Fatal(err)
	}
	want := TransferAuthorization{
		TokenName: "USDC", TokenVersion: "2", ChainID: big.NewInt(84532),
		VerifyingContract: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		From:              testPayer,
		To:                "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		Value:             big.NewInt(10000),
		ValidAfter:        big.NewInt(now.Unix() - 600),
		ValidBefore:       big.NewInt(now.Unix() + 60),
		Nonce:             nonce,
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("got  %+v\nwant %+v", a, want)
	}

	t.Run("timeout bounds validBefore", func(t *testing.T) {
		r := req
		r.MaxTimeoutSeconds = 300
		a, err := NewAuthorization(r, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.ValidBefore.Int64() - now.Unix(); got != 300 {
			t.Errorf("validBefore = now + %d, want now + 300", got)
		}
		if got := now.Unix() - a.ValidAfter.Int64(); got != 600 {
			t.Errorf("validAfter = now - %d, want now - 600", got)
		}
	})
	t.Run("no timeout defaults to 60s", func(t *testing.T) {
		r := req
		r.MaxTimeoutSeconds = 0
		a, err := NewAuthorization(r, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.ValidBefore.Int64() - now.Unix(); got != 60 {
			t.Errorf("validBefore = now + %d, want now + 60", got)
		}
	})
	t.Run("timeout beyond the bound", func(t *testing.T) {
		r := req
		r.MaxTimeoutSeconds = MaxValiditySeconds + 1
		if _, err := NewAuthorization(r, testPayer, now, nonce); err == nil || !strings.Contains(err.Error(), "maxTimeoutSeconds") {
			t.Errorf("error %v, want one naming maxTimeoutSeconds", err)
		}
	})
	t.Run("validAfter never negative", func(t *testing.T) {
		a, err := NewAuthorization(req, testPayer, time.Unix(100, 0), nonce)
		if err != nil {
			t.Fatal(err)
		}
		if a.ValidAfter.Sign() != 0 {
			t.Errorf("validAfter = %v, want 0", a.ValidAfter)
		}
	})
	t.Run("uint256 amount kept exactly", func(t *testing.T) {
		r := req
		r.Amount = maxUint256.String()
		a, err := NewAuthorization(r, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if a.Value.Cmp(maxUint256) != 0 {
			t.Errorf("value = %v", a.Value)
		}
	})

	bad := []struct {
		name    string
		edit    func(*Requirement)
		from    string
		wantErr string
	}{
		{"no extra", func(r *Requirement) { r.Extra = nil }, testPayer, "EIP-712 domain"},
		{"no token version", func(r *Requirement) { r.Extra = json.RawMessage(`{"name":"USDC"}`) }, testPayer, "EIP-712 domain"},
		{"extra not an object", func(r *Requirement) { r.Extra = json.RawMessage(`"USDC"`) }, testPayer, "extra"},
		{"other scheme", func(r *Requirement) { r.Scheme = "upto" }, testPayer, "scheme"},
		{"non-EVM network", func(r *Requirement) { r.Network = "solana" }, testPayer, "network"},
		{"bad amount", func(r *Requirement) { r.Amount = "1.0" }, testPayer, "amount"},
		{"payTo not an address", func(r *Requirement) { r.PayTo = "merchant" }, testPayer, "payTo"},
		{"payTo bad checksum", func(r *Requirement) { r.PayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287c" }, testPayer, "checksum"},
		{"asset without 0x", func(r *Requirement) { r.Asset = "036CbD53842c5426634e7929541eC2318f3dCF7e" }, testPayer, "asset"},
		{"from not an address", func(*Requirement) {}, "0x1234", "from"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := req
			tt.edit(&r)
			_, err := NewAuthorization(r, tt.from, now, nonce)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// decodePaymentHeader undoes the header's base64 and JSON.
func decodePaymentHeader(t *testing.T, h PaymentHeader) map[string]json.RawMessage {
	t.Helper()
	b, err := base64.StdEncoding.Strict().DecodeString(h.Value)
	if err != nil {
		t.Fatalf("header value is not standard base64: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func assertJSONEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func assertMembers(t *testing.T, m map[string]json.RawMessage, names ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	if len(got) != len(names) {
		t.Errorf("members %v, want %v", got, names)
	}
	for _, n := range names {
		if _, ok := m[n]; !ok {
			t.Errorf("member %q missing (have %v)", n, got)
		}
	}
}

func testSignature() []byte {
	sig := bytes.Repeat([]byte{0xab}, 64)
	return append(sig, 27)
}

func TestPaymentHeaderFor(t *testing.T) {
	now := time.Unix(1_740_672_149, 0)
	nonce := [32]byte{0xf3, 0x74, 0x66, 31: 0x80}
	wantPayload := `{"signature":"0x` + strings.Repeat("ab", 64) + `1b","authorization":{` +
		`"from":"` + testPayer + `","to":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","value":"10000",` +
		`"validAfter":"1740671549","validBefore":"1740672209",` +
		`"nonce":"0xf37466` + strings.Repeat("00", 28) + `80"}}`

	t.Run("v1", func(t *testing.T) {
		p, err := ParsePaymentRequired(nil, v1Body(v1Requirement))
		if err != nil {
			t.Fatal(err)
		}
		req := mustRequirement(t, p, "eip155:84532")
		auth, err := NewAuthorization(req, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		h, err := PaymentHeaderFor(p, req, auth, testSignature())
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "X-PAYMENT" {
			t.Errorf("name %q, want X-PAYMENT", h.Name)
		}
		m := decodePaymentHeader(t, h)
		assertMembers(t, m, "x402Version", "scheme", "network", "payload")
		assertJSONEqual(t, m["x402Version"], []byte(`1`))
		assertJSONEqual(t, m["scheme"], []byte(`"exact"`))
		// The network is echoed as the registry named it.
		assertJSONEqual(t, m["network"], []byte(`"base-sepolia"`))
		assertJSONEqual(t, m["payload"], []byte(wantPayload))
	})

	t.Run("v2", func(t *testing.T) {
		p, err := ParsePaymentRequired(headerWith("PAYMENT-REQUIRED", b64(v2Doc(v2Requirement))), nil)
		if err != nil {
			t.Fatal(err)
		}
		req := mustRequirement(t, p, "base-sepolia")
		auth, err := NewAuthorization(req, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		h, err := PaymentHeaderFor(p, req, auth, testSignature())
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "PAYMENT-SIGNATURE" {
			t.Errorf("name %q, want PAYMENT-SIGNATURE", h.Name)
		}
		m := decodePaymentHeader(t, h)
		assertMembers(t, m, "x402Version", "resource", "accepted", "payload")
		assertJSONEqual(t, m["x402Version"], []byte(`2`))
		assertJSONEqual(t, m["resource"], []byte(v2Resource))
		assertJSONEqual(t, m["accepted"], req.Raw)
		assertJSONEqual(t, m["accepted"], []byte(v2Requirement))
		assertJSONEqual(t, m["payload"], []byte(wantPayload))
	})

	t.Run("v2 accepted keeps members the node does not know", func(t *testing.T) {
		odd := withMember(t, v2Requirement, "extra", `{"name":"USDC","version":"2","feeHint":{"x":[1,2]}}`)
		p, err := ParsePaymentRequired(headerWith("PAYMENT-REQUIRED", b64(v2Doc(odd))), nil)
		if err != nil {
			t.Fatal(err)
		}
		req := mustRequirement(t, p, "eip155:84532")
		auth, err := NewAuthorization(req, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		h, err := PaymentHeaderFor(p, req, auth, testSignature())
		if err != nil {
			t.Fatal(err)
		}
		assertJSONEqual(t, decodePaymentHeader(t, h)["accepted"], []byte(odd))
	})

	t.Run("refusals", func(t *testing.T) {
		p, err := ParsePaymentRequired(nil, v1Body(v1Requirement))
		if err != nil {
			t.Fatal(err)
		}
		req := mustRequirement(t, p, "base-sepolia")
		auth, err := NewAuthorization(req, testPayer, now, nonce)
		if err != nil {
			t.Fatal(err)
		}
		other := req
		other.Raw = []byte(withMember(t, v1Requirement, "payTo", `"0x0000000000000000000000000000000000000001"`))
		moreValue := auth
		moreValue.Value = big.NewInt(10001)
		otherTo := auth
		otherTo.To = "0x0000000000000000000000000000000000000001"
		noBounds := auth
		noBounds.ValidBefore = nil
		v3 := *p
		v3.Version = 3
		for _, tc := range []struct {
			name string
			p    *PaymentRequired
			req  Requirement
			auth TransferAuthorization
			sig  []byte
		}{
			{"short signature", p, req, auth, testSignature()[:64]},
			{"requirement not offered", p, other, auth, testSignature()},
			{"requirement without raw", p, Requirement{Scheme: "exact"}, auth, testSignature()},
			{"value differs from amount", p, req, moreValue, testSignature()},
			{"pays someone else", p, req, otherTo, testSignature()},
			{"missing bound", p, req, noBounds, testSignature()},
			{"unknown version", &v3, req, auth, testSignature()},
			{"no requirements", nil, req, auth, testSignature()},
		} {
			if _, err := PaymentHeaderFor(tc.p, tc.req, tc.auth, tc.sig); err == nil {
				t.Errorf("%s: no error", tc.name)
			}
		}
	})
}

func TestParseSettlementResponse(t *testing.T) {
	ok := `{"success":true,"transaction":"0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef",` +
		`"network":"eip155:84532","payer":"0x857b06519E91e3A54538791bDbb0E22373e36b66","amount":"10000"}`
	failed := `{"success":false,"errorReason":"insufficient_funds","transaction":"","network":"base-sepolia",` +
		`"payer":"0x857b06519E91e3A54538791bDbb0E22373e36b66"}`
	wantOK := &SettlementResponse{Success: true,
		Transaction: "0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef",
		Network:     "eip155:84532", Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66"}
	wantFailed := &SettlementResponse{ErrorReason: "insufficient_funds", Network: "base-sepolia",
		Payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66"}
	both := headerWith("PAYMENT-RESPONSE", b64(ok))
	both.Set("X-PAYMENT-RESPONSE", b64(failed))

	tests := []struct {
		name    string
		header  http.Header
		want    *SettlementResponse
		raw     string
		wantErr bool
	}{
		{"v2", headerWith("PAYMENT-RESPONSE", b64(ok)), wantOK, ok, false},
		{"v1", headerWith("X-PAYMENT-RESPONSE", b64(failed)), wantFailed, failed, false},
		{"both: v2 wins", both, wantOK, ok, false},
		{"neither", http.Header{"Content-Type": {"application/json"}}, nil, "", false},
		{"nil header", nil, nil, "", false},
		{"bad base64", headerWith("PAYMENT-RESPONSE", "%%%"), nil, "", true},
		{"bad JSON", headerWith("X-PAYMENT-RESPONSE", b64(`{"success":`)), nil, "", true},
		{"not an object", headerWith("PAYMENT-RESPONSE", b64(`"ok"`)), nil, "", true},
		{"wrong member type", headerWith("PAYMENT-RESPONSE", b64(`{"success":"yes"}`)), nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSettlementResponse(tt.header)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("no error; got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != nil {
				if string(got.Raw) != tt.raw {
					t.Errorf("Raw = %s, want %s", got.Raw, tt.raw)
				}
				got.Raw = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func FuzzParsePaymentRequired(f *testing.F) {
	f.Add("", string(v1Body(v1Requirement)))
	f.Add(b64(v2Doc(v2Requirement)), "")
	f.Add(b64(v2Doc(v2Requirement, strings.Replace(v2Requirement, "eip155:84532", "base", 1))), "{}")
	f.Add("", `{"x402Version":1,"accepts":[{}]}`)
	f.Fuzz(func(t *testing.T, header, body string) {
		h := http.Header{}
		if header != "" {
			h.Set("PAYMENT-REQUIRED", header)
		}
		p, err := ParsePaymentRequired(h, []byte(body))
		if err != nil {
			return
		}
		if p.Version != 1 && p.Version != 2 {
			t.Fatalf("version %d", p.Version)
		}
		if len(p.Accepts) == 0 {
			t.Fatal("no accepts")
		}
		for _, r := range p.Accepts {
			if _, err := parseAmount(r.Amount); err != nil {
				t.Fatalf("accepted amount %q: %v", r.Amount, err)
			}
			if r.Scheme == "" || r.Network == "" || r.Asset == "" || r.PayTo == "" || len(r.Raw) == 0 {
				t.Fatalf("incomplete requirement %+v", r)
			}
		}
		_, _ = p.Select("base")
	})
}

func FuzzParseSettlementResponse(f *testing.F) {
	f.Add(b64(`{"success":true,"transaction":"0x12","network":"base","payer":"0x34"}`))
	f.Add("e30")
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseSettlementResponse(headerWith("PAYMENT-RESPONSE", v))
		if err == nil && v != "" && s == nil {
			t.Fatal("nil receipt without error for a present header")
		}
	})
}
