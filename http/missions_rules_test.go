package http

import (
	"crypto/ed25519"
	"net/http"
	"strings"
	"testing"

	"github.com/civnode/civnode/eventlog"
)

// TestMissionForbiddenTransitions: every step out of turn is 409 and appends
// nothing; the record is unchanged.
func TestMissionForbiddenTransitions(t *testing.T) {
	w := newMissionWorld(t)
	claim := map[string]any{"claimer": "bob"}
	complete := map[string]any{"result": "out of turn"}
	settle := map[string]any{}
	for _, tc := range []struct {
		state, action, token string
		body                 any
		code                 string
	}{
		{"created", "complete", "ada", complete, "invalid_state"},
		{"created", "settle", "pub", settle, "invalid_state"},
		{"claimed", "claim", "bob", claim, "already_claimed"},
		{"claimed", "settle", "pub", settle, "invalid_state"},
		{"completed", "claim", "bob", claim, "invalid_state"},
		{"completed", "complete", "ada", complete, "invalid_state"},
		{"settled", "claim", "bob", claim, "invalid_state"},
		{"settled", "complete", "ada", complete, "invalid_state"},
		{"settled", "settle", "pub", settle, "invalid_state"},
	} {
		t.Run(tc.state+"/"+tc.action, func(t *testing.T) {
			rec := w.advance(tc.state)
			before := w.get("/v1/core/missions/"+rec.MissionID).wantOK(t, nil)
			w.refused(t, w.step(rec.MissionID, tc.action, w.tokens[tc.token], tc.body), w.log.Tip().Seq, http.StatusConflict, tc.code, "")
			if after := w.get("/v1/core/missions/" + rec.MissionID); string(after.body) != string(before.body) {
				t.Errorf("record changed:\n %s\n %s", before.body, after.body)
			}
		})
	}
}

// TestMissionAuthorization: each actor that may not take a step gets 403 and
// appends nothing.
func TestMissionAuthorization(t *testing.T) {
	w := newMissionWorld(t)
	// An identity controlled from another node: no token of this node acts for
	// it. Its mission was published before the hand-off.
	w.addAgent("remote", "order", "broker", "")
	remoteMission := w.create(w.tokens["remote"], map[string]any{"publisher": "remote", "subnet_id": "outer-rim"})
	w.step(remoteMission.MissionID, "claim", w.tokens["ada"], map[string]any{"claimer": "ada"}).wantOK(t, nil)
	w.step(remoteMission.MissionID, "complete", w.tokens["ada"], map[string]any{"result": "r"}).wantOK(t, nil)
	w.civPost("/v1/civilization/controller-binding", map[string]any{"agent_did": w.dids["remote"],
		"controller_kind": "remote_orchestrator", "controller_ref": "far-away",
		"node_id": eventlog.DIDKey(ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey))}).wantOK(t, nil)

	created := w.advance("created")
	claimed := w.advance("claimed")
	completed := w.advance("completed")
	observer := w.observerToken()

	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		code, field               string
	}{
		// Create.
		{"owner for a subnet it does not govern", "POST", "/v1/core/missions", testToken,
			missionBody(map[string]any{"publisher": "outer-rim", "publisher_kind": "planetary_government"}), "forbidden", "publisher"},
		{"agent token for another identity", "POST", "/v1/core/missions", w.tokens["ada"], missionBody(nil), "forbidden", "publisher"},
		{"agent token for a subnet", "POST", "/v1/core/missions", w.tokens["pub"],
			missionBody(map[string]any{"publisher": "genesis", "publisher_kind": "planetary_government"}), "forbidden", "publisher"},
		{"owner for an identity bound elsewhere", "POST", "/v1/core/missions", testToken,
			missionBody(map[string]any{"publisher": "remote"}), "forbidden", "publisher"},
		{"its own agent token for an identity handed to another node", "POST", "/v1/core/missions", w.tokens["remote"],
			missionBody(map[string]any{"publisher": "remote"}), "forbidden", "publisher"},
		{"unknown publisher", "POST", "/v1/core/missions", testToken,
			missionBody(map[string]any{"publisher": "nobody"}), "forbidden", "publisher"},
		// Claim.
		{"agent token claiming for another identity", "POST", "/v1/core/missions/" + created.MissionID + "/claim", w.tokens["ada"],
			map[string]any{"claimer": "bob"}, "forbidden", "claimer"},
		{"owner claiming for an identity bound elsewhere", "POST", "/v1/core/missions/" + created.MissionID + "/claim", testToken,
			map[string]any{"claimer": "remote"}, "forbidden", "claimer"},
		// Complete.
		{"agent token of another agent completing", "POST", "/v1/core/missions/" + claimed.MissionID + "/complete", w.tokens["bob"],
			map[string]any{"result": "mine now"}, "forbidden", ""},
		{"publisher completing", "POST", "/v1/core/missions/" + claimed.MissionID + "/complete", w.tokens["pub"],
			map[string]any{"result": "mine now"}, "forbidden", ""},
		// Settle.
		{"claimer settling", "POST", "/v1/core/missions/" + completed.MissionID + "/settle", w.tokens["ada"],
			map[string]any{}, "forbidden", ""},
		{"another agent settling", "POST", "/v1/core/missions/" + completed.MissionID + "/settle", w.tokens["bob"],
			map[string]any{}, "forbidden", ""},
		{"owner settling a mission of an identity bound elsewhere in a subnet it does not govern", "POST",
			"/v1/core/missions/" + remoteMission.MissionID + "/settle", testToken, map[string]any{}, "forbidden", ""},
		// Supervision is the owner's.
		{"agent token on supervision", "GET", "/v1/supervision/missions", w.tokens["pub"], nil, "forbidden", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w.refused(t, w.civSend(tc.method, tc.path, tc.token, tc.body), w.log.Tip().Seq, http.StatusForbidden, tc.code, tc.field)
		})
	}

	// An observer token reads none of the mission endpoints.
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/core/missions"}, {"POST", "/v1/core/missions"}, {"GET", "/v1/core/missions/" + created.MissionID},
		{"GET", "/v1/core/missions/my?public_id=pub"}, {"POST", "/v1/core/missions/" + created.MissionID + "/claim"},
		{"POST", "/v1/core/missions/" + claimed.MissionID + "/complete"},
		{"POST", "/v1/core/missions/" + completed.MissionID + "/settle"}, {"GET", "/v1/supervision/missions"},
	} {
		var body any
		if rt.method == "POST" {
			body = map[string]any{}
		}
		w.refused(t, w.civSend(rt.method, rt.path, observer, body), w.log.Tip().Seq, http.StatusForbidden, "forbidden", "")
	}
	// No token at all: 401.
	w.refused(t, w.civSend("POST", "/v1/core/missions", "", missionBody(nil)), w.log.Tip().Seq, http.StatusUnauthorized, "unauthorized", "")

	// The owner settles a mission of an identity it acts for, and of a subnet it
	// governs; agent tokens read missions.
	w.step(completed.MissionID, "settle", testToken, map[string]any{}).wantOK(t, nil)
	w.civSend("GET", "/v1/core/missions", w.tokens["bob"], nil).wantOK(t, nil)
	w.civSend("GET", "/v1/core/missions/"+created.MissionID, w.tokens["bob"], nil).wantOK(t, nil)
}

// TestMissionClaimEligibility: a claimer without an active binding, with the
// wrong role or faction, or claiming its own mission gets 403 not_eligible
// saying which.
func TestMissionClaimEligibility(t *testing.T) {
	w := newMissionWorld(t)
	m := w.create(testToken, nil)
	for _, tc := range []struct {
		claimer, says string
	}{
		{"unbound", "controller binding"},
		{"idle", "controller binding"},
		{"clerk", "requires role enforcer; clerk has archivist"},
		{"rover", "requires faction order; rover has frontier"},
		{"pub", "published this mission"},
	} {
		t.Run(tc.claimer, func(t *testing.T) {
			r := w.step(m.MissionID, "claim", w.tokens[tc.claimer], map[string]any{"claimer": tc.claimer})
			w.refused(t, r, w.log.Tip().Seq, http.StatusForbidden, "not_eligible", "claimer")
			if !strings.Contains(string(r.body), tc.says) {
				t.Errorf("message %s does not say %q", r.body, tc.says)
			}
		})
	}
	// A profile without a role does not meet a required role.
	w.addAgent("blank", "order", "enforcer", "active")
	w.civPost("/v1/civilization/profile", map[string]any{"agent_did": w.dids["blank"], "faction": "order"}).wantOK(t, nil)
	r := w.step(m.MissionID, "claim", w.tokens["blank"], map[string]any{"claimer": "blank"})
	w.refused(t, r, w.log.Tip().Seq, http.StatusForbidden, "not_eligible", "claimer")
	if !strings.Contains(string(r.body), "blank has no role") {
		t.Errorf("message %s", r.body)
	}
	// An open mission takes any bound agent; an unknown claimer is 404.
	open := w.create(testToken, map[string]any{"required_role": nil, "required_faction": nil})
	w.refused(t, w.step(open.MissionID, "claim", testToken, map[string]any{"claimer": "nobody"}), w.log.Tip().Seq,
		http.StatusNotFound, "identity_not_found", "claimer")
	w.step(open.MissionID, "claim", w.tokens["clerk"], map[string]any{"claimer": "clerk"}).wantOK(t, nil)
	// The owner claims for an eligible identity of the node.
	w.step(m.MissionID, "claim", testToken, map[string]any{"claimer": "bob"}).wantOK(t, nil)
}

// TestMissionInputValidation: bad bodies are 400 naming the field, and append
// nothing.
func TestMissionInputValidation(t *testing.T) {
	w := newMissionWorld(t)
	long := strings.Repeat("a", 201)
	bigPayload := map[string]any{"blob": strings.Repeat("x", 64<<10)}
	for _, tc := range []struct {
		name  string
		body  any
		code  string
		field string
	}{
		{"unknown field", missionBody(map[string]any{"agent_credits": 5}), "unknown_field", "agent_credits"},
		{"unknown reward field", missionBody(map[string]any{"reward": map[string]any{"agent_credits": 1}}), "unknown_field", "agent_credits"},
		{"title not a string", missionBody(map[string]any{"title": 7}), "invalid_field", "title"},
		{"title missing", missionBody(map[string]any{"title": nil}), "missing_field", "title"},
		{"title empty", missionBody(map[string]any{"title": ""}), "missing_field", "title"},
		{"title too long", missionBody(map[string]any{"title": long}), "invalid_field", "title"},
		{"title control character", missionBody(map[string]any{"title": "a\nb"}), "invalid_field", "title"},
		{"description missing", missionBody(map[string]any{"description": nil}), "missing_field", "description"},
		{"description too long", missionBody(map[string]any{"description": strings.Repeat("d", 10001)}), "invalid_field", "description"},
		{"publisher missing", missionBody(map[string]any{"publisher": nil}), "missing_field", "publisher"},
		{"publisher malformed", missionBody(map[string]any{"publisher": "Pub!"}), "invalid_field", "publisher"},
		{"publisher_kind missing", missionBody(map[string]any{"publisher_kind": nil}), "missing_field", "publisher_kind"},
		{"publisher_kind unknown", missionBody(map[string]any{"publisher_kind": "guild"}), "invalid_field", "publisher_kind"},
		{"identity as planetary_government", missionBody(map[string]any{"publisher_kind": "planetary_government"}), "invalid_field", "publisher_kind"},
		{"subnet as organization", missionBody(map[string]any{"publisher": "genesis"}), "invalid_field", "publisher_kind"},
		{"domain missing", missionBody(map[string]any{"domain": nil}), "missing_field", "domain"},
		{"domain malformed", missionBody(map[string]any{"domain": "Security"}), "invalid_field", "domain"},
		{"subnet_id malformed", missionBody(map[string]any{"subnet_id": "a b"}), "invalid_field", "subnet_id"},
		{"zone_id malformed", missionBody(map[string]any{"zone_id": ""}), "invalid_field", "zone_id"},
		{"required_role unknown", missionBody(map[string]any{"required_role": "pilot"}), "invalid_field", "required_role"},
		{"required_faction unknown", missionBody(map[string]any{"required_faction": "empire"}), "invalid_field", "required_faction"},
		{"reward missing", missionBody(map[string]any{"reward": nil}), "missing_field", "reward"},
		{"reward not an object", missionBody(map[string]any{"reward": 5}), "invalid_field", "reward"},
		{"reward field missing", missionBody(map[string]any{"reward": map[string]any{"agent_credit": 1, "reputation": 1, "capacity": 1}}),
			"missing_field", "reward.treasury_share_credit"},
		{"negative reward", missionBody(map[string]any{"reward": reward(-1, 0, 0, 0)}), "invalid_field", "reward.agent_credit"},
		{"negative reputation", missionBody(map[string]any{"reward": reward(0, -3, 0, 0)}), "invalid_field", "reward.reputation"},
		{"fractional reward", missionBody(map[string]any{"reward": map[string]any{"agent_credit": 1.5, "reputation": 0, "capacity": 0, "treasury_share_credit": 0}}),
			"invalid_field", "reward.agent_credit"},
		{"reward as a string", missionBody(map[string]any{"reward": map[string]any{"agent_credit": 1, "reputation": 0, "capacity": "1", "treasury_share_credit": 0}}),
			"invalid_field", "reward.capacity"},
		{"reward too large", missionBody(map[string]any{"reward": reward(0, 0, 0, 0)}), "", ""}, // replaced below
		{"payload an array", missionBody(map[string]any{"payload": []int{1}}), "invalid_field", "payload"},
		{"payload too large", missionBody(map[string]any{"payload": bigPayload}), "invalid_field", "payload"},
		{"payload with duplicate keys", `{"title":"t","description":"d","publisher":"pub","publisher_kind":"agent","domain":"d",` +
			`"subnet_id":"genesis","reward":{"agent_credit":0,"reputation":0,"capacity":0,"treasury_share_credit":0},"payload":{"a":1,"a":2}}`,
			"invalid_json", "payload.a"}, // the HTTP layer refuses duplicate keys anywhere
		{"not JSON", `{"title":`, "invalid_json", ""},
		{"two values", `{} {}`, "invalid_json", ""},
	} {
		if tc.name == "reward too large" {
			tc.body = `{"title":"t","description":"d","publisher":"pub","publisher_kind":"agent","domain":"d","subnet_id":"genesis",` +
				`"reward":{"agent_credit":1000000000001,"reputation":0,"capacity":0,"treasury_share_credit":0}}`
			tc.code, tc.field = "invalid_field", "reward.agent_credit"
		}
		token := w.tokens["pub"]
		if tc.name == "subnet as organization" {
			token = testToken // the owner governs genesis
		}
		t.Run("create/"+tc.name, func(t *testing.T) {
			w.refused(t, w.civSend(http.MethodPost, "/v1/core/missions", token, tc.body), w.log.Tip().Seq, http.StatusBadRequest, tc.code, tc.field)
		})
	}

	m := w.advance("created")
	claimed := w.advance("claimed")
	for _, tc := range []struct {
		name, id, action string
		body             any
		code, field      string
	}{
		{"claimer missing", m.MissionID, "claim", map[string]any{}, "missing_field", "claimer"},
		{"claimer not a string", m.MissionID, "claim", map[string]any{"claimer": 1}, "invalid_field", "claimer"},
		{"claimer malformed", m.MissionID, "claim", map[string]any{"claimer": "A"}, "invalid_field", "claimer"},
		{"claim unknown field", m.MissionID, "claim", map[string]any{"claimer": "ada", "note": "x"}, "unknown_field", "note"},
		{"claim empty body", m.MissionID, "claim", "", "invalid_json", ""},
		{"result missing", claimed.MissionID, "complete", map[string]any{}, "missing_field", "result"},
		{"result empty", claimed.MissionID, "complete", map[string]any{"result": ""}, "invalid_field", "result"},
		{"result not a string", claimed.MissionID, "complete", map[string]any{"result": map[string]any{"a": 1}}, "invalid_field", "result"},
		{"result too long", claimed.MissionID, "complete", map[string]any{"result": strings.Repeat("r", 262145)}, "invalid_field", "result"},
		{"settle with a field", claimed.MissionID, "settle", map[string]any{"force": true}, "unknown_field", "force"},
		{"settle with an array", claimed.MissionID, "settle", `[]`, "invalid_json", ""},
	} {
		t.Run(tc.action+"/"+tc.name, func(t *testing.T) {
			token := w.tokens["ada"]
			if tc.action == "settle" {
				token = w.tokens["pub"]
			}
			w.refused(t, w.step(tc.id, tc.action, token, tc.body), w.log.Tip().Seq, http.StatusBadRequest, tc.code, tc.field)
		})
	}
	// The limits are inclusive.
	w.create(w.tokens["pub"], map[string]any{"title": strings.Repeat("é", 200), "description": strings.Repeat("d", 10000),
		"payload": map[string]any{"blob": strings.Repeat("x", 64<<10-12)}})
	w.step(claimed.MissionID, "complete", w.tokens["ada"], map[string]any{"result": strings.Repeat("r", 262144)}).wantOK(t, nil)
}
