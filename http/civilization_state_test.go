package http

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// TestStateControllerBindingProof checks the proof of GET /v1/state the way an
// outside verifier would, with nothing but the response: split the compact JWS,
// decode its parts, check the header and that the payload is the binding without
// its proof, and verify the Ed25519 signature with the public key the response
// itself gives.
func TestStateControllerBindingProof(t *testing.T) {
	n := newCivNode(t)
	n.bootstrap(map[string]any{"display_name": "Not The Node"}) // agent identities do not change the node's
	var state struct {
		Identity struct {
			NodeDID           string                     `json:"node_did"`
			PublicKey         string                     `json:"public_key"`
			PublicIdentity    map[string]any             `json:"public_identity"`
			ControllerBinding map[string]json.RawMessage `json:"controller_binding"`
		} `json:"identity"`
	}
	r := n.get("/v1/state").wantOK(t, &state)
	id := state.Identity
	var raw struct {
		Identity struct {
			PublicIdentity    json.RawMessage `json:"public_identity"`
			ControllerBinding json.RawMessage `json:"controller_binding"`
		} `json:"identity"`
	}
	r.decode(t, &raw)
	wantKeyOrder(t, "public_identity", raw.Identity.PublicIdentity, []string{"agent_did", "public_id", "public_key", "key_type"})
	wantKeyOrder(t, "controller_binding", raw.Identity.ControllerBinding, append(append([]string{}, bindingKeys...), "proof"))
	if id.PublicIdentity["agent_did"] != id.NodeDID || id.PublicIdentity["public_id"] != nil ||
		id.PublicIdentity["public_key"] != id.PublicKey || id.PublicIdentity["key_type"] != "Ed25519" {
		t.Errorf("public_identity = %v", id.PublicIdentity)
	}
	var proof string
	if err := json.Unmarshal(id.ControllerBinding["proof"], &proof); err != nil {
		t.Fatalf("proof: %v in %s", err, r.body)
	}
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q does not have three parts", proof)
	}
	dec := func(s string) []byte {
		t.Helper()
		if strings.ContainsAny(s, "+/=") {
			t.Errorf("part %q is not unpadded base64url", s)
		}
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var header map[string]any
	if err := json.Unmarshal(dec(parts[0]), &header); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(header, map[string]any{"alg": "EdDSA", "kid": id.NodeDID}) {
		t.Errorf("header = %v", header)
	}
	payload := dec(parts[1])
	// The payload is the binding as served, minus proof, in canonical form
	// (sorted keys, no spaces).
	binding := map[string]any{}
	for k, v := range id.ControllerBinding {
		if k == "proof" {
			continue
		}
		var x any
		json.Unmarshal(v, &x)
		binding[k] = x
	}
	if want := mustMarshal(t, binding); !bytes.Equal(payload, want) {
		t.Errorf("payload %s\n want %s", payload, want)
	}
	if binding["agent_did"] != id.NodeDID || binding["controller_kind"] != "node" || binding["controller_ref"] != id.NodeDID ||
		binding["node_id"] != id.NodeDID || binding["ownership_scope"] != "exclusive" || binding["active"] != true {
		t.Errorf("binding = %v", binding)
	}
	pub, err := base64.StdEncoding.DecodeString(id.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public_key %q", id.PublicKey)
	}
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), dec(parts[2])) {
		t.Fatal("proof does not verify with the node's public key")
	}
	// A changed payload does not verify.
	forged := base64.RawURLEncoding.EncodeToString(bytes.Replace(payload, []byte(`"active":true`), []byte(`"active":false`), 1))
	if ed25519.Verify(pub, []byte(parts[0]+"."+forged), dec(parts[2])) {
		t.Fatal("a forged payload verifies")
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNoKeyMaterialLeaves searches the whole chain (as exported), the audit log
// and every identity response for the node key and every agent key, in the usual
// encodings, and for the token secrets.
func TestNoKeyMaterialLeaves(t *testing.T) {
	n := newCivNode(t)
	slugs := civActivity(t, n)
	agentTok := n.agentToken(slugs[0])
	var seen bytes.Buffer
	for _, a := range civSnapshot(t, n.testNode, slugs) {
		seen.WriteString(a)
	}
	for _, path := range []string{"/v1/state", "/v1/events/export", "/v1/audit?limit=1000",
		"/v1/civilization/briefing", "/v1/supervision/briefing", "/v1/events?limit=1000"} {
		seen.Write(n.get(path).wantOK(t, nil).body)
	}
	if !strings.Contains(seen.String(), `"type":"identity.bootstrapped"`) {
		t.Fatal("the search saw no identity events")
	}

	secrets := map[string][]byte{"node seed": n.key.Seed(), "node private key": n.key}
	agents := 0
	n.log.Scan(1, n.log.Tip().Seq, func(ev *eventlog.Event) error {
		if ev.Type != events.TypeIdentityBootstrapped {
			return nil
		}
		var p events.IdentityBootstrapped
		json.Unmarshal(ev.Payload, &p)
		k, err := commands.AgentKey(n.key, p.KeySalt)
		if err != nil {
			t.Fatal(err)
		}
		if eventlog.DIDKey(k.Public().(ed25519.PublicKey)) != p.AgentDID {
			t.Errorf("%s is not derived from its salt", p.AgentDID)
		}
		secrets[p.PublicID+" seed"], secrets[p.PublicID+" private key"] = k.Seed(), k
		agents++
		return nil
	})
	if agents != len(slugs) {
		t.Fatalf("%d identity.bootstrapped events, want %d", agents, len(slugs))
	}
	hay := seen.Bytes()
	for name, s := range secrets {
		for enc, form := range map[string]string{
			"raw": string(s), "hex": hex.EncodeToString(s), "HEX": strings.ToUpper(hex.EncodeToString(s)),
			"base64": base64.StdEncoding.EncodeToString(s), "base64 raw": base64.RawStdEncoding.EncodeToString(s),
			"base64url": base64.RawURLEncoding.EncodeToString(s),
		} {
			if bytes.Contains(hay, []byte(form)) {
				t.Errorf("%s appears (%s)", name, enc)
			}
		}
	}
	for name, tok := range map[string]string{"owner token": testToken, "agent token": agentTok} {
		if bytes.Contains(hay, []byte(tok)) {
			t.Errorf("%s appears", name)
		}
	}
}
