package events

import (
	"encoding/json"
	"testing"
)

// TestMissionPayloadSchema freezes the JSON of each mission and payment payload:
// field names and types are a persisted schema and must never change.
func TestMissionPayloadSchema(t *testing.T) {
	s := func(v string) *string { return &v }
	r := Reward{AgentCredit: 25, Reputation: 3, Capacity: 1, TreasuryShareCredit: 5}
	rw := `{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5}`
	for _, tc := range []struct {
		v    any
		want string
	}{
		{MissionCreated{MissionID: "m", Title: "T", Description: "D", Publisher: "pub", PublisherKind: PublisherOrganization,
			IssuerDID: "did:key:zP", Domain: "security", SubnetID: "genesis", RequiredRole: s("enforcer"), Reward: r,
			Payload: json.RawMessage(`{}`)},
			`{"mission_id":"m","title":"T","description":"D","publisher":"pub","publisher_kind":"organization",` +
				`"issuer_did":"did:key:zP","domain":"security","subnet_id":"genesis","zone_id":null,"required_role":"enforcer",` +
				`"required_faction":null,"reward":` + rw + `,"payload":{}}`},
		{MissionAccepted{MissionID: "m", IssuerDID: "did:key:zP", Claimer: "ada", ClaimerDID: "did:key:zA", Reward: r},
			`{"mission_id":"m","issuer_did":"did:key:zP","claimer":"ada","claimer_did":"did:key:zA","reward":` + rw + `}`},
		{MissionCompleted{MissionID: "m", Claimer: "ada", Result: "ok"}, `{"mission_id":"m","claimer":"ada","result":"ok"}`},
		{MissionSettled{MissionID: "m", SettledBy: "did:key:zP", Reward: r}, `{"mission_id":"m","settled_by":"did:key:zP","reward":` + rw + `}`},
		{PaymentSettled{MissionID: "m", To: "ada", ToDID: "did:key:zA", AgentCredit: 25, Reputation: 3, Capacity: 1,
			Treasury: "genesis", TreasuryShareCredit: 5},
			`{"mission_id":"m","to":"ada","to_did":"did:key:zA","agent_credit":25,"reputation":3,"capacity":1,` +
				`"treasury":"genesis","treasury_share_credit":5}`},
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
