package http

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
)

func TestState(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents("mission.created", "mission.accepted")
	r := n.get("/v1/state")
	if r.status != http.StatusOK {
		t.Fatalf("status = %d (body %s)", r.status, r.body)
	}
	var got map[string]json.RawMessage
	r.decode(t, &got)

	pub := base64.StdEncoding.EncodeToString(n.log.PublicKey())
	tip := n.log.Tip()
	want := map[string]string{
		"identity": `{"node_did":"` + n.log.NodeDID() + `","public_key":"` + pub +
			`","public_identity":{"agent_did":"` + n.log.NodeDID() + `","public_id":null,"public_key":"` + pub +
			`","key_type":"Ed25519"},"controller_binding":null}`,
		"memory_owner": `{"public_key":"` + pub + `"}`,
		"balance":      `{"credit":0,"reputation":0,"capacity":0}`,
		"network": `{"status":"not_configured","peers":0,"nats":{"enabled":false},` +
			`"details":"/v1/client/network/status"}`,
		"brain":    `{"provider":"none","reachable":false,"model":null}`,
		"autonomy": `{"enabled":false,"constraints":[]}`,
		"chain":    `{"seq":3,"tip_hash":"` + tip.ID + `","root_hash":"` + n.log.RootHash() + `"}`,
	}
	if len(got) != len(want) {
		t.Errorf("state has %d keys, want %d: %s", len(got), len(want), r.body)
	}
	for k, w := range want {
		if string(got[k]) != w {
			t.Errorf("%s = %s\n want %s", k, got[k], w)
		}
	}
	if tip.Seq != 3 {
		t.Fatalf("tip seq = %d, want 3", tip.Seq)
	}
}

func TestStateNeedsToken(t *testing.T) {
	n := newTestNode(t)
	n.request(http.MethodGet, "/v1/state", "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
}
