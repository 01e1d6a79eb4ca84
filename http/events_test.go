package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

type eventsPage struct {
	Events []json.RawMessage `json:"events"`
	Total  uint64            `json:"total"`
}

type eventHead struct {
	Seq       uint64 `json:"seq"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
}

func (n *testNode) events(t *testing.T, query string) (eventsPage, []eventHead) {
	t.Helper()
	r := n.get("/v1/events" + query)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/events%s: status %d (body %s)", query, r.status, r.body)
	}
	var p eventsPage
	r.decode(t, &p)
	if p.Events == nil {
		t.Fatalf("events is null or missing in %s", r.body)
	}
	heads := make([]eventHead, len(p.Events))
	for i, raw := range p.Events {
		if err := json.Unmarshal(raw, &heads[i]); err != nil {
			t.Fatal(err)
		}
	}
	return p, heads
}

// fixture: genesis plus these, seq 2..7.
var fixtureTypes = []string{"mission.created", "mission.created", "mission.accepted",
	"payment.settled", "mission.created", "mission.completed"}

func TestEventsServesStoredBytes(t *testing.T) {
	n := newTestNode(t)
	appended := n.appendEvents(fixtureTypes...)
	p, _ := n.events(t, "")
	if p.Total != 7 || len(p.Events) != 7 {
		t.Fatalf("total %d, %d events; want 7, 7", p.Total, len(p.Events))
	}
	for i, ev := range appended {
		if !bytes.Equal(p.Events[i+1], ev.Raw()) {
			t.Errorf("event %d served as\n%s\nstored as\n%s", ev.Seq, p.Events[i+1], ev.Raw())
		}
	}
	// The payload holds "<&>"; re-encoding with encoding/json would escape it and
	// break the signature.
	if !bytes.Contains(p.Events[1], []byte(`"note":"<&>"`)) {
		t.Errorf("payload was re-encoded: %s", p.Events[1])
	}
}

func TestEventsEmptyIsArray(t *testing.T) {
	n := newTestNode(t)
	r := n.get("/v1/events?since=2999-01-01T00:00:00Z")
	if r.status != http.StatusOK || string(r.body) != "{\"events\":[],\"total\":0}\n" {
		t.Errorf("got %d %s", r.status, r.body)
	}
}

func TestEventsTypeFilterAndLimit(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents(fixtureTypes...)
	for _, tc := range []struct {
		query     string
		total     uint64
		wantTypes []string
	}{
		{"?type=mission.created", 3, []string{"mission.created", "mission.created", "mission.created"}},
		{"?type=mission.*", 5, []string{"mission.created", "mission.created", "mission.accepted", "mission.created", "mission.completed"}},
		{"?type=mission.created&limit=2", 3, []string{"mission.created", "mission.created"}},
		{"?type=mission.*&limit=1", 5, []string{"mission.created"}},
		{"?type=payment.settled", 1, []string{"payment.settled"}},
		{"?type=peer.connected", 0, []string{}},
		{"?type=node.*", 1, []string{"node.genesis"}},
		{"?limit=3", 7, []string{"node.genesis", "mission.created", "mission.created"}},
		{"?limit=1000", 7, []string{"node.genesis", "mission.created", "mission.created", "mission.accepted", "payment.settled", "mission.created", "mission.completed"}},
		{"?limit=&type=&since=", 7, []string{"node.genesis", "mission.created", "mission.created", "mission.accepted", "payment.settled", "mission.created", "mission.completed"}},
		{"?unknown=1&limit=1", 7, []string{"node.genesis"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			p, heads := n.events(t, tc.query)
			if p.Total != tc.total {
				t.Errorf("total = %d, want %d", p.Total, tc.total)
			}
			var got []string
			for i, h := range heads {
				got = append(got, h.Type)
				if i > 0 && h.Seq <= heads[i-1].Seq {
					t.Errorf("events out of order: seq %d after %d", h.Seq, heads[i-1].Seq)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantTypes) {
				t.Errorf("types = %v, want %v", got, tc.wantTypes)
			}
		})
	}
}

func TestEventsLimitDefaultsTo100(t *testing.T) {
	n := newTestNode(t)
	types := make([]string, 120)
	for i := range types {
		types[i] = "mission.created"
	}
	n.appendEvents(types...)
	p, _ := n.events(t, "")
	if len(p.Events) != 100 || p.Total != 121 {
		t.Errorf("%d events, total %d; want 100, 121", len(p.Events), p.Total)
	}
}

// Paging with since=<timestamp of the last event seen> visits every event once.
func TestEventsPagingBySince(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents(fixtureTypes...)
	for _, tc := range []struct {
		filter string
		want   []uint64
	}{
		{"", []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"&type=mission.*", []uint64{2, 3, 4, 6, 7}},
		{"&type=mission.created", []uint64{2, 3, 6}},
	} {
		for limit := 1; limit <= 3; limit++ {
			var seen []uint64
			since := ""
			remaining := uint64(len(tc.want))
			for page := 0; page < 20; page++ {
				q := fmt.Sprintf("?limit=%d%s", limit, tc.filter)
				if since != "" {
					q += "&since=" + url.QueryEscape(since)
				}
				p, heads := n.events(t, q)
				if p.Total != remaining {
					t.Errorf("%s: total %d, want the %d not yet seen", q, p.Total, remaining)
				}
				if len(heads) == 0 {
					break
				}
				for _, h := range heads {
					seen = append(seen, h.Seq)
				}
				remaining -= uint64(len(heads))
				since = heads[len(heads)-1].Timestamp
			}
			if fmt.Sprint(seen) != fmt.Sprint(tc.want) {
				t.Errorf("type%s limit %d: visited %v, want %v", tc.filter, limit, seen, tc.want)
			}
		}
	}
}

// since takes any RFC 3339 offset and precision and means the same instant in UTC.
func TestEventsSinceOffsets(t *testing.T) {
	n := newTestNode(t)
	evs := n.appendEvents(fixtureTypes...)
	pivot := evs[2] // seq 4; events after it: 5, 6, 7
	ts, err := time.Parse(eventlog.TimeLayout, pivot.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	plus2 := time.FixedZone("", 2*3600)
	minus5 := time.FixedZone("", -5*3600-30*60)
	for _, since := range []string{
		pivot.Timestamp,
		ts.In(plus2).Format("2006-01-02T15:04:05.000000Z07:00"),
		ts.In(minus5).Format("2006-01-02T15:04:05.000000000Z07:00"),
		ts.Add(400 * time.Nanosecond).Format(time.RFC3339Nano), // still before seq 5 (µs steps)
	} {
		p, heads := n.events(t, "?since="+url.QueryEscape(since))
		if p.Total != 3 || len(heads) != 3 || heads[0].Seq != 5 {
			t.Errorf("since=%s: total %d, first %+v; want 3 events from seq 5", since, p.Total, heads)
		}
	}
	// An unescaped "+" offset arrives as a space and is still read as "+".
	raw := ts.In(plus2).Format(time.RFC3339Nano)
	p, _ := n.events(t, "?since="+raw)
	if p.Total != 3 {
		t.Errorf("since=%s (unescaped): total %d, want 3", raw, p.Total)
	}
}
