package eventlog

import (
	"context"
	"testing"
	"time"
)

// queryLog holds 60 events of three types, one per second after genesis.
func queryLog(t *testing.T) *Log {
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := openMem(t, Options{Now: steppingClock(start, time.Second)})
	types := []string{"mission.created", "mission.settled", "identity.updated"}
	for i := range 60 {
		mustAppend(t, l, draft(types[i%3], "i", i))
	}
	return l
}

func TestQuery(t *testing.T) {
	l := queryLog(t)
	ev10, _ := l.Event(10)
	cases := []struct {
		name       string
		q          Query
		wantN      int
		wantTotal  uint64
		wantFirst  uint64
		wantAllTyp string
	}{
		{"all", Query{Limit: 1000}, 61, 61, 1, ""},
		{"limit", Query{Limit: 5}, 5, 61, 1, ""},
		{"since", Query{Since: ev10.Time(), Limit: 1000}, 51, 51, 11, ""},
		{"since between", Query{Since: ev10.Time().Add(-time.Millisecond), Limit: 3}, 3, 52, 10, ""},
		{"type", Query{Type: "mission.settled", Limit: 1000}, 20, 20, 3, "mission.settled"},
		{"type limit", Query{Type: "mission.settled", Limit: 4}, 4, 20, 3, "mission.settled"},
		{"type since", Query{Type: "identity.updated", Since: ev10.Time(), Limit: 2}, 2, 17, 13, "identity.updated"},
		{"prefix", Query{Type: "mission.*", Limit: 1000}, 40, 40, 2, ""},
		{"prefix since limit", Query{Type: "mission.*", Since: ev10.Time(), Limit: 5}, 5, 34, 11, ""},
		{"unknown type", Query{Type: "oracle.settled", Limit: 10}, 0, 0, 0, ""},
		{"count only", Query{Limit: 0}, 0, 61, 0, ""},
		{"count only by type", Query{Type: "mission.settled", Limit: 0}, 0, 20, 0, ""},
		{"until", Query{Until: 30, Limit: 1000}, 30, 30, 1, ""},
		{"until by type", Query{Type: "mission.settled", Until: 30, Limit: 1000}, 10, 10, 3, "mission.settled"},
		{"until by prefix since", Query{Type: "mission.*", Since: ev10.Time(), Until: 30, Limit: 3}, 3, 14, 11, ""},
		{"until past tip", Query{Until: 1000, Limit: 1000}, 61, 61, 1, ""},
		{"future", Query{Since: time.Now().Add(time.Hour * 24 * 365), Limit: 10}, 0, 0, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, total, err := l.Query(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != tc.wantN || total != tc.wantTotal {
				t.Fatalf("got %d events, total %d; want %d, %d", len(evs), total, tc.wantN, tc.wantTotal)
			}
			if tc.wantN > 0 && evs[0].Seq != tc.wantFirst {
				t.Errorf("first seq %d, want %d", evs[0].Seq, tc.wantFirst)
			}
			for i, ev := range evs {
				if i > 0 && ev.Seq <= evs[i-1].Seq {
					t.Errorf("not oldest first at %d", i)
				}
				if tc.wantAllTyp != "" && ev.Type != tc.wantAllTyp {
					t.Errorf("seq %d has type %s", ev.Seq, ev.Type)
				}
			}
		})
	}
}

// TestQueryPagesBySince pages with since = timestamp of the last event seen and
// visits every event exactly once.
func TestQueryPagesBySince(t *testing.T) {
	l := queryLog(t)
	var since time.Time
	var next uint64 = 1
	for {
		evs, _, err := l.Query(Query{Since: since, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq != next {
				t.Fatalf("got seq %d, want %d", ev.Seq, next)
			}
			next++
		}
		since = evs[len(evs)-1].Time()
	}
	if next != 62 {
		t.Fatalf("visited %d events, want 61", next-1)
	}
}

func TestValidTypeFilter(t *testing.T) {
	for s, want := range map[string]bool{
		"mission.created": true, "mission.*": true, "game.starter_missions.*": true,
		"mission": false, "mission.": false, "Mission.created": false, "*": false, ".*": false,
		"mission.*.x": false, "": false, "mission created": false,
	} {
		if got := ValidTypeFilter(s); got != want {
			t.Errorf("ValidTypeFilter(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestAudit(t *testing.T) {
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := openMem(t, Options{Now: stalledClock(base)})
	ctx := context.Background()
	for _, a := range []string{"node.started", "token.created", "token.revoked", "node.stopped"} {
		if _, err := l.Audit(ctx, a, l.NodeDID(), map[string]string{"k": a}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := l.AuditEntries(AuditQuery{Limit: 100})
	if err != nil || len(all) != 4 {
		t.Fatalf("entries = %d, %v", len(all), err)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp <= all[i-1].Timestamp {
			t.Fatalf("audit timestamps do not increase: %s then %s", all[i-1].Timestamp, all[i].Timestamp)
		}
	}
	tokens, _ := l.AuditEntries(AuditQuery{Action: "token.*", Limit: 100})
	if len(tokens) != 2 || tokens[0].Action != "token.created" {
		t.Fatalf("token.* = %+v", tokens)
	}
	since, _ := time.Parse(TimeLayout, all[1].Timestamp)
	later, _ := l.AuditEntries(AuditQuery{Since: since, Limit: 100})
	if len(later) != 2 || later[0].Action != "token.revoked" {
		t.Fatalf("since = %+v", later)
	}
	if tip := l.Tip(); tip.Seq != 1 {
		t.Fatalf("audit entries reached the chain: tip %d", tip.Seq)
	}
	if _, err := l.Audit(ctx, "Bad Action", "x", nil); err == nil {
		t.Fatal("accepted a malformed action")
	}
}
