package eventlog_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// These tests live beside Canonicalize, not in package events, because they read
// the bytes of a Canonical (export_test.go).

// oldMissionCanonical is what Canonicalize made of a mission.created before
// MissionCreated wrote its own form: encoding/json, then the JCS encoder.
func oldMissionCanonical(t testing.TB, pl events.MissionCreated) []byte {
	t.Helper()
	raw, err := json.Marshal(pl)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eventlog.CanonicalObject(raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func typicalMission() events.MissionCreated {
	role := "enforcer"
	return events.MissionCreated{
		MissionID:     "019b0000-0000-7000-8000-000000000001",
		Title:         "Escort the ore convoy",
		Description:   "Meet the convoy at the north gate and see it to the smelter.",
		Publisher:     "genesis",
		PublisherKind: events.PublisherPlanetaryGovernment,
		IssuerDID:     "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK",
		Domain:        "security",
		SubnetID:      "genesis",
		RequiredRole:  &role,
		Reward:        events.Reward{AgentCredit: 25, Reputation: 3, Capacity: 1, TreasuryShareCredit: 5},
		Payload:       json.RawMessage(`{"cargo":"ore","escorts":2}`),
	}
}

// checkMission holds Canonicalize(pl) to the old path and says whether
// AppendCanonical wrote it: it must, unless pl has a string that is not valid
// UTF-8, a reward beyond ±2^53 or no payload.
func checkMission(t *testing.T, pl events.MissionCreated) {
	t.Helper()
	want := oldMissionCanonical(t, pl)
	c, err := eventlog.Canonicalize(pl)
	if err != nil {
		t.Fatalf("Canonicalize: %v", err)
	}
	if got := eventlog.CanonicalBytes(c); !bytes.Equal(got, want) {
		t.Fatalf("Canonicalize:\n got %s\nwant %s", got, want)
	}
	fast := len(pl.Payload) > 0
	for _, s := range []string{pl.MissionID, pl.Title, pl.Description, pl.Publisher, pl.PublisherKind, pl.IssuerDID, pl.Domain, pl.SubnetID} {
		fast = fast && utf8.ValidString(s)
	}
	for _, s := range []*string{pl.ZoneID, pl.RequiredRole, pl.RequiredFaction} {
		fast = fast && (s == nil || utf8.ValidString(*s))
	}
	r := pl.Reward
	for _, v := range []int64{r.AgentCredit, r.Reputation, r.Capacity, r.TreasuryShareCredit} {
		fast = fast && -1<<53 <= v && v <= 1<<53
	}
	got, ok := pl.AppendCanonical(nil)
	if ok != fast {
		t.Fatalf("AppendCanonical ok = %v, want %v for %+v", ok, fast, pl)
	}
	if ok && !bytes.Equal(got, want) {
		t.Fatalf("AppendCanonical:\n got %s\nwant %s", got, want)
	}
	// Appending goes after what dst holds.
	if more, ok := pl.AppendCanonical([]byte("x")); fast && (!ok || string(more) != "x"+string(want)) {
		t.Fatalf("AppendCanonical after x: %s, %v", more, ok)
	}
}

func TestMissionCreatedCanonical(t *testing.T) {
	typical := typicalMission()
	got, ok := typical.AppendCanonical(nil)
	const want = `{"description":"Meet the convoy at the north gate and see it to the smelter.","domain":"security","issuer_did":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK","mission_id":"019b0000-0000-7000-8000-000000000001","payload":{"cargo":"ore","escorts":2},"publisher":"genesis","publisher_kind":"planetary_government","required_faction":null,"required_role":"enforcer","reward":{"agent_credit":25,"capacity":1,"reputation":3,"treasury_share_credit":5},"subnet_id":"genesis","title":"Escort the ore convoy","zone_id":null}`
	if !ok || string(got) != want {
		t.Fatalf("typical mission: ok %v\n got %s\nwant %s", ok, got, want)
	}
	// An empty but non-nil payload is no JSON: encoding/json refuses it, and so
	// must Canonicalize still.
	empty := typicalMission()
	empty.Payload = json.RawMessage{}
	if _, ok := empty.AppendCanonical(nil); ok {
		t.Error("AppendCanonical wrote an empty payload")
	}
	if _, err := eventlog.Canonicalize(empty); err == nil {
		t.Error("Canonicalize accepted an empty payload")
	}
	for name, edit := range map[string]func(*events.MissionCreated){
		"typical":        func(*events.MissionCreated) {},
		"all optionals":  func(m *events.MissionCreated) { z, f := "zone-7", "miners"; m.ZoneID, m.RequiredFaction = &z, &f },
		"empty strings":  func(m *events.MissionCreated) { e := ""; *m = events.MissionCreated{ZoneID: &e, Payload: m.Payload} },
		"escapes":        func(m *events.MissionCreated) { m.Title = "<&> \"q\" \\ \b\f\n\r\t\x00\x1f\x7f \u2028\u2029 é 😀" },
		"invalid utf-8":  func(m *events.MissionCreated) { m.Description = "ore\xffconvoy" },
		"invalid option": func(m *events.MissionCreated) { r := "\xc3"; m.RequiredRole = &r },
		"2^53":           func(m *events.MissionCreated) { m.Reward.AgentCredit, m.Reward.Capacity = 1<<53, -1<<53 },
		"2^53+1":         func(m *events.MissionCreated) { m.Reward.TreasuryShareCredit = 1<<53 + 1 },
		"-2^53-1":        func(m *events.MissionCreated) { m.Reward.Reputation = -1<<53 - 1 },
		"negative": func(m *events.MissionCreated) {
			m.Reward = events.Reward{AgentCredit: -1, Reputation: -25, Capacity: -999999999999999, TreasuryShareCredit: -1000000000000000}
		},
		"nil payload":  func(m *events.MissionCreated) { m.Payload = nil },
		"empty object": func(m *events.MissionCreated) { m.Payload = json.RawMessage(`{}`) },
	} {
		t.Run(name, func(t *testing.T) {
			pl := typicalMission()
			edit(&pl)
			checkMission(t, pl)
		})
	}
}

// FuzzMissionCreatedCanonical holds Canonicalize of a mission.created, which
// MissionCreated.AppendCanonical writes, byte for byte to encoding/json and the
// JCS encoder, for any strings, rewards and canonical payload.
func FuzzMissionCreatedCanonical(f *testing.F) {
	m := typicalMission()
	r := m.Reward
	f.Add(m.MissionID, m.Title, m.Description, m.Publisher, m.PublisherKind, m.IssuerDID, m.Domain, m.SubnetID,
		"", *m.RequiredRole, "", uint8(2), r.AgentCredit, r.Reputation, r.Capacity, r.TreasuryShareCredit, []byte(m.Payload))
	f.Add("", "<&> \"quoted\" \\", "\b\f\n\r\t\x00\x01\x1f\x7f", "\u2028\u2029", "é ü 中文", "😀", "", "",
		"zone", "", "\u2028", uint8(7), int64(1<<53), int64(-1<<53), int64(0), int64(-1), []byte(`{"z":[1,2.50,"<>"],"a":{"é":null}}`))
	f.Add("\xff", "a\xc3", "\xed\xa0\x80", "", "", "", "", "",
		"\xff", "\xff", "\xff", uint8(7), int64(1<<53+1), int64(-1<<53-1), int64(-9223372036854775808), int64(9223372036854775807), []byte(`{}`))
	f.Add("", "", "", "", "", "", "", "", "", "", "", uint8(0), int64(0), int64(0), int64(0), int64(0), []byte(nil))
	f.Fuzz(func(t *testing.T, missionID, title, description, publisher, publisherKind, issuerDID, domain, subnetID,
		zone, role, faction string, set uint8, agentCredit, reputation, capacity, treasury int64, payload []byte) {
		pl := events.MissionCreated{
			MissionID: missionID, Title: title, Description: description, Publisher: publisher,
			PublisherKind: publisherKind, IssuerDID: issuerDID, Domain: domain, SubnetID: subnetID,
			Reward: events.Reward{AgentCredit: agentCredit, Reputation: reputation, Capacity: capacity, TreasuryShareCredit: treasury},
		}
		if set&1 != 0 {
			pl.ZoneID = &zone
		}
		if set&2 != 0 {
			pl.RequiredRole = &role
		}
		if set&4 != 0 {
			pl.RequiredFaction = &faction
		}
		if len(payload) > 0 {
			canonical, err := eventlog.CanonicalObject(payload)
			if err != nil {
				return // not a payload the log accepts: nothing to compare
			}
			pl.Payload = canonical
		}
		checkMission(t, pl)
	})
}

// BenchmarkMissionCreatedCanonical: Canonicalize of a typical mission.created by
// the path it had (encoding/json, then the JCS encoder) and by
// MissionCreated.AppendCanonical.
func BenchmarkMissionCreatedCanonical(b *testing.B) {
	pl := typicalMission()
	b.Run("json+jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, err := json.Marshal(pl)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := eventlog.CanonicalObject(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := eventlog.Canonicalize(pl); err != nil {
				b.Fatal(err)
			}
		}
	})
}
