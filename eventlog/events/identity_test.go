package events

import (
	"encoding/json"
	"testing"
)

// TestIdentityPayloadSchema freezes the JSON of each payload: field names and
// types are a persisted schema and must never change.
func TestIdentityPayloadSchema(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		v    any
		want string
	}{
		{IdentityBootstrapped{AgentDID: "did:key:zA", PublicID: "ada", DisplayName: "Ada", KeySalt: "00ff"},
			`{"agent_did":"did:key:zA","public_id":"ada","display_name":"Ada","key_salt":"00ff"}`},
		{IdentityUpdated{AgentDID: "did:key:zA", PublicID: "ada", DisplayName: "Ada", CapabilitiesGranted: []string{}, SubnetMemberships: []string{"g"}},
			`{"agent_did":"did:key:zA","public_id":"ada","display_name":"Ada","model_provider":null,"capabilities_granted":[],"wallet_adapter":null,"subnet_memberships":["g"]}`},
		{ControllerBindingUpdated{AgentDID: "did:key:zA", ControllerKind: "local_model", ControllerRef: "r", NodeID: s("n"), OwnershipScope: ScopeShared, Active: true},
			`{"agent_did":"did:key:zA","controller_kind":"local_model","controller_ref":"r","node_id":"n","ownership_scope":"shared","active":true}`},
		{ProfileUpdated{AgentDID: "did:key:zA", Faction: s("order")},
			`{"agent_did":"did:key:zA","faction":"order","role":null,"strategy":null,"home_subnet_id":null,"home_zone_id":null}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%T = %s\n want %s", tc.v, got, tc.want)
		}
	}
}
