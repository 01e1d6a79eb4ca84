package projections

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// checkStateJCS asserts that rec's JCS appender writes exactly what the slow
// path (encoding/json as the API writes, then the log's JCS encoder) makes
// of rec, and that it declines only what it documents: a string that is not
// valid UTF-8, an integer beyond 2^53 - 1, a payload that is not an object.
func checkStateJCS(t *testing.T, rec stateJCSAppender, mayDecline bool) {
	t.Helper()
	j := jcsWriter{ok: true}
	rec.appendJCS(&j)
	raw, err := stdJSON(rec)
	if err != nil {
		if j.ok {
			t.Fatalf("appendJCS wrote %s where encoding/json fails: %v", j.b, err)
		}
		return
	}
	want, err := eventlog.CanonicalObject(raw)
	if err != nil {
		t.Fatalf("JCS of %s: %v", raw, err)
	}
	if !j.ok {
		if !mayDecline {
			t.Fatalf("appendJCS declined a record it can write: %s", want)
		}
		return
	}
	if !bytes.Equal(j.b, want) {
		t.Fatalf("appendJCS differs from the slow path:\n got %s\nwant %s", j.b, want)
	}
}

// stateRecords builds one record of each kind from a string, a number and a
// mission payload.
func stateRecords(s string, n int64, payload string) []stateJCSAppender {
	p := &s
	b := BindingRecord{AgentDID: s, ControllerKind: s, ControllerRef: s + s, NodeID: p, OwnershipScope: s,
		Active: n%2 == 0, CreatedAt: s, UpdatedAt: s}
	return []stateJCSAppender{
		&MissionRecord{MissionID: s, Title: s, Description: s + "\n" + s, State: s, Publisher: s, PublisherKind: s,
			Domain: s, SubnetID: s, ZoneID: p, RequiredRole: nil, RequiredFaction: p,
			Reward:  events.Reward{AgentCredit: n, Reputation: -n, Capacity: n / 3, TreasuryShareCredit: 7},
			Payload: json.RawMessage(payload), Claimer: p, Result: p, CreatedAt: s, UpdatedAt: s, SettledAt: p},
		&IdentityRecord{AgentDID: s, PublicID: s, DisplayName: s, ControllerID: p, ModelProvider: nil,
			CapabilitiesGranted: []string{s, "", s}, ControllerBinding: &b, SubnetMemberships: []string{},
			Stats: Stats{Credit: n, Reputation: n + 1, Capacity: -n, MissionsCompleted: 3}, CreatedAt: s, UpdatedAt: s},
		&IdentityRecord{AgentDID: s, CapabilitiesGranted: nil, SubnetMemberships: []string{s}},
		&b,
		&ProfileRecord{AgentDID: s, Faction: p, Role: nil, Strategy: p, HomeSubnetID: p, HomeZoneID: nil, UpdatedAt: s},
	}
}

// TestStateJCSAppenders holds the appenders to the slow path on strings that
// take every path of a JCS string, integers at the edge of exactness and
// payloads JCS reorders and renumbers.
func TestStateJCSAppenders(t *testing.T) {
	payloads := []string{`{}`, `{"b":1,"a":[1.50,"x",{"z":null,"y":true}]}`, `{"n":1e2,"s":"\u00e9\u2028<>"}`, ` { } `}
	for _, s := range jsonSeeds {
		for _, n := range []int64{0, 1, -1, 1<<53 - 1, -(1<<53 - 1), 1 << 53, -1 << 60} {
			for _, pl := range payloads {
				decline := !utf8.ValidString(s) || n >= 1<<53-1 || n <= -(1<<53) // stats hold n + 1
				for _, rec := range stateRecords(s, n, pl) {
					checkStateJCS(t, rec, decline)
				}
			}
		}
	}
}

func FuzzStateJCSAppenders(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s, int64(len(s)), `{"k":"`+s+`"}`)
	}
	f.Fuzz(func(t *testing.T, s string, n int64, payload string) {
		if !json.Valid([]byte(payload)) || !utf8.ValidString(payload) {
			return // no record holds such a payload: the log refuses it
		}
		for _, rec := range stateRecords(s, n, payload) {
			checkStateJCS(t, rec, true)
		}
	})
}
