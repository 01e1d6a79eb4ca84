package http

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

func TestBadQueryValues(t *testing.T) {
	n := newTestNode(t)
	n.appendEvents("mission.created")
	tipBefore := n.log.Tip()
	auditBefore := len(n.auditEntries(""))
	for _, tc := range []struct {
		path, field string
	}{
		{"/v1/events?limit=0", "limit"},
		{"/v1/events?limit=1001", "limit"},
		{"/v1/events?limit=x", "limit"},
		{"/v1/events?limit=-1", "limit"},
		{"/v1/events?limit=%2B5", "limit"},
		{"/v1/events?limit=%205", "limit"},
		{"/v1/events?limit=1.5", "limit"},
		{"/v1/events?limit=99999999999999999999", "limit"},
		{"/v1/events?since=yesterday", "since"},
		{"/v1/events?since=2026-11-21", "since"},
		{"/v1/events?since=2026-11-21T23:05:25", "since"},
		{"/v1/events?since=2026-13-01T00:00:00Z", "since"},
		{"/v1/events?type=Mission.Created", "type"},
		{"/v1/events?type=mission.", "type"},
		{"/v1/events?type=mission", "type"},
		{"/v1/events?type=*", "type"},
		{"/v1/events?type=mission.*.x", "type"},
		{"/v1/audit?action=bad%20action", "action"},
		{"/v1/audit?action=Token.Created", "action"},
		{"/v1/audit?limit=0", "limit"},
		{"/v1/audit?limit=1001", "limit"},
		{"/v1/audit?since=yesterday", "since"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			n.get(tc.path).wantError(t, http.StatusBadRequest, "invalid_field", tc.field)
		})
	}
	if tip := n.log.Tip(); tip != tipBefore {
		t.Errorf("tip moved: %+v → %+v", tipBefore, tip)
	}
	if got := len(n.auditEntries("")); got != auditBefore {
		t.Errorf("audit entries: %d → %d", auditBefore, got)
	}
}

func TestQueryLimit(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int
		ok   bool
	}{
		{"", 100, true},
		{"limit=", 100, true},
		{"limit=1", 1, true},
		{"limit=1000", 1000, true},
		{"limit=0001000", 1000, true},
		{"limit=0", 0, false},
		{"limit=1001", 0, false},
		{"limit=abc", 0, false},
		{"limit=1e2", 0, false},
		{"limit=1&limit=1", 0, false},
	} {
		q, _ := url.ParseQuery(tc.raw)
		got, err := queryLimit(q)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("queryLimit(%q) = %d, %v; want %d, ok %v", tc.raw, got, err, tc.want, tc.ok)
		}
	}
}

func TestQuerySince(t *testing.T) {
	want := time.Date(2026, 11, 21, 23, 5, 25, 123456000, time.UTC)
	for _, raw := range []string{
		"2026-11-21T23:05:25.123456Z",
		"2026-11-22T01:05:25.123456+02:00",
		"2026-11-22T01:05:25.123456000+02:00",
		"2026-11-21T18:05:25.123456-05:00",
	} {
		got, err := querySince(url.Values{"since": {raw}})
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("querySince(%q) = %v, %v; want %v in UTC", raw, got, err, want)
		}
	}
	got, err := querySince(url.Values{"since": {"2026-11-21T23:05:25Z"}})
	if err != nil || !got.Equal(want.Truncate(time.Second)) {
		t.Errorf("no fraction: %v, %v", got, err)
	}
}

// FuzzQuery checks that the query parsers never panic, accept only what the wire
// contract allows, and reject with a 400 naming the parameter.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"", "limit=5", "limit=0", "limit=1000", "limit=1001", "limit=x&limit=y",
		"since=2026-11-21T23:05:25.123456Z", "since=2026-11-22T01:05:25+02:00",
		"since=2026-11-22T01:05:25 02:00", "since=yesterday", "type=mission.*",
		"type=mission.created", "type=Mission.Created", "type=mission.", "action=bad action",
		"limit=%00", "since=%zz", "type=a;", "a=1&a=2", "%zz=1", "type=a.b.c.d.*&limit=7&since=0001-01-01T00:00:00Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		// A query string that checkQuery passes parses whole and names each
		// parameter once; one it refuses is 400 invalid_query.
		if err := checkQuery(raw); err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != codeInvalidQuery {
				t.Fatalf("%q: error %#v, want 400 invalid_query", raw, err)
			}
			return
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatalf("%q: passed checkQuery, but url.ParseQuery says %v", raw, err)
		}
		for name, vs := range q {
			if len(vs) != 1 {
				t.Fatalf("%q: passed checkQuery with %s given %d times", raw, name, len(vs))
			}
		}
		check := func(err error, field string) {
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != codeInvalidField || e.Field != field {
				t.Fatalf("%q: error %#v, want 400 invalid_field %s", raw, err, field)
			}
		}
		limit, err := queryLimit(q)
		check(err, "limit")
		if err == nil && (limit < 1 || limit > maxLimit) {
			t.Fatalf("%q: limit %d accepted", raw, limit)
		}
		since, err := querySince(q)
		check(err, "since")
		if err == nil && since.Location() != time.UTC {
			t.Fatalf("%q: since %v not in UTC", raw, since)
		}
		if err == nil && !since.IsZero() {
			v := strings.ReplaceAll(q.Get("since"), " ", "+")
			if orig, perr := time.Parse(time.RFC3339Nano, v); perr != nil || !orig.Equal(since) {
				t.Fatalf("%q: since %v is not the instant given", raw, since)
			}
		}
		for _, name := range []string{"type", "action"} {
			v, err := queryFilter(q, name)
			check(err, name)
			if err == nil && v != "" && !eventlog.ValidTypeFilter(v) {
				t.Fatalf("%q: %s %q accepted", raw, name, v)
			}
		}
	})
}
