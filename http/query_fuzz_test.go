package http

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/stream"
)

// queryParserSeeds are query strings the parsers below must tell apart.
var queryParserSeeds = []string{
	"", "limit=5&cursor=aQAAAAAAAAAE", "limit=&cursor=", "limit=1001", "limit=0", "cursor=bogus", "hours=1", "hours=720",
	"hours=721", "hours=01", "hours=+1", "hours=1.5", "hours=", "after_seq=0", "after_seq=18446744073709551615",
	"after_seq=9999999999999999999", "after_seq=-1", "after_seq=1e3", "public_id=ada", "public_id=Ada", "public_id=ab",
	"token=abc&type=mission.*", "type=mission.*&token=abc&token=def", "toke%6E=x&a=1", "token=x&toke%6E=y", "token=%zz", "token", "a=1&&b=2",
	"since=2026-11-21T23:05:25Z&after_seq=3",
}

// FuzzQueryParsers holds the query parsers that FuzzQuery does not cover to
// the wire contract, each against a reference written another way: paging
// (limit 1..1000 with the route's default, cursor as given), hours (1..720
// written plainly, default 24), after_seq (a seq of at most 19 digits),
// public_id, and the stream's removal of ?token= (every other pair kept as
// sent, in order; the token given only when there is exactly one).
func FuzzQueryParsers(f *testing.F) {
	for _, r := range docRequests(f) {
		f.Add(r.query)
	}
	for _, s := range queryParserSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		checkTokenCut(t, raw)
		if checkQuery(raw) != nil {
			return // FuzzQuery's
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatalf("%q: passed checkQuery, but url.ParseQuery says %v", raw, err)
		}
		refused := func(err error, code, field string) {
			t.Helper()
			var e *Error
			var ce *commands.Error
			switch {
			case errors.As(err, &e) && e.Status == http.StatusBadRequest && e.Code == code && e.Field == field:
			case errors.As(err, &ce) && ce.Kind == commands.KindInvalid && ce.Code == code && ce.Field == field:
			default:
				t.Fatalf("%q: error %#v, want 400 %s %s", raw, err, code, field)
			}
		}

		limit, cursor, err := pageQuery(q, defaultIdentityLimit)
		wantLimit, ok := referenceLimit(q.Get("limit"), defaultIdentityLimit)
		switch {
		case ok != (err == nil):
			t.Fatalf("%q: page limit %d, %v; reference accepts %v", raw, limit, err, ok)
		case err != nil:
			refused(err, codeInvalidField, "limit")
		case limit != wantLimit || cursor != q.Get("cursor"):
			t.Fatalf("%q: page limit %d cursor %q; reference %d, %q", raw, limit, cursor, wantLimit, q.Get("cursor"))
		}

		hours, err := queryHours(q)
		want, ok := referenceHours(q.Get("hours"))
		switch {
		case ok != (err == nil):
			t.Fatalf("%q: hours %d, %v; reference accepts %v", raw, hours, err, ok)
		case err != nil:
			refused(err, codeInvalidField, "hours")
		case hours != want:
			t.Fatalf("%q: hours %d, reference %d", raw, hours, want)
		}

		seq, has, err := queryAfterSeq(q)
		v := q.Get("after_seq")
		okSeq := plainSeq.MatchString(v)
		switch {
		case v == "":
			if err != nil || has || seq != 0 {
				t.Fatalf("%q: no after_seq read as %d, %v, %v", raw, seq, has, err)
			}
		case okSeq != (err == nil):
			t.Fatalf("%q: after_seq %d, %v; reference accepts %v", raw, seq, err, okSeq)
		case err != nil:
			refused(err, codeInvalidField, "after_seq")
		default:
			n, perr := strconv.ParseUint(v, 10, 64)
			if perr != nil || !has || seq != n {
				t.Fatalf("%q: after_seq read as %d, %v; strconv says %d, %v", raw, seq, has, n, perr)
			}
		}

		slug, err := queryPublicID(q)
		switch v := q.Get("public_id"); {
		case v == "":
			refused(err, "missing_field", "public_id")
		case !plainPublicID.MatchString(v):
			refused(err, codeInvalidField, "public_id")
		case err != nil || slug != v || !commands.ValidPublicID(slug):
			t.Fatalf("%q: public_id %q, %v", raw, slug, err)
		}
	})
}

// The references' forms of the parameters.
var (
	plainSeq      = regexp.MustCompile(`^[0-9]{1,19}$`)
	plainPublicID = regexp.MustCompile(`^[a-z0-9-]{3,40}$`)
	plainLimit    = regexp.MustCompile(`^[0-9]{1,9}$`)
	plainHours    = regexp.MustCompile(`^[1-9][0-9]{0,2}$`)
)

// referenceLimit is the limit a page query asks for: def when absent, else
// a plain decimal integer from 1 to 1000 (leading zeros allowed, as the
// parser has always taken them).
func referenceLimit(v string, def int) (int, bool) {
	if v == "" {
		return def, true
	}
	if !plainLimit.MatchString(v) {
		return 0, false
	}
	n, _ := strconv.Atoi(v)
	return n, n >= 1 && n <= maxLimit
}

// referenceHours is hours: 24 when absent, else 1..720 with no sign and no
// leading zero.
func referenceHours(v string) (int, bool) {
	if v == "" {
		return defaultBriefingHours, true
	}
	if !plainHours.MatchString(v) {
		return 0, false
	}
	n, _ := strconv.Atoi(v)
	return n, n <= maxBriefingHours
}

// checkTokenCut holds cutQueryToken to its contract on raw.
func checkTokenCut(t *testing.T, raw string) {
	t.Helper()
	token, rest, found := cutQueryToken(raw)
	var kept, values []string
	// cutQueryToken looks for the name as written first, so a name escaped
	// as toke%6E is not cut, though url.Query reads it as token.
	if !strings.Contains(raw, "token") {
		if token != "" || rest != raw || found {
			t.Fatalf("%q: cut to token %q, rest %q, found %v", raw, token, rest, found)
		}
		return
	}
	for _, pair := range strings.Split(raw, "&") {
		rawName, rawValue, _ := strings.Cut(pair, "=")
		if name, err := url.QueryUnescape(rawName); err == nil && name == "token" {
			v, err := url.QueryUnescape(rawValue)
			if err != nil {
				v = ""
			}
			values = append(values, v)
			continue
		}
		kept = append(kept, pair)
	}
	want := ""
	if len(values) == 1 {
		want = values[0]
	}
	if found != (len(values) > 0) || token != want || (found && rest != strings.Join(kept, "&")) || (!found && rest != raw) {
		t.Fatalf("%q: cut to token %q, rest %q, found %v; want %q, %q, %v", raw, token, rest, found,
			want, strings.Join(kept, "&"), len(values) > 0)
	}
	if checkQuery(raw) == nil && checkQuery(rest) != nil {
		t.Fatalf("%q passes checkQuery, but %q, the query without its token, does not", raw, rest)
	}
}

// routeQueryPaths are the GET routes that read a query, and two that read
// none (every route checks its query with checkQuery).
var routeQueryPaths = []string{
	"/v1/events", "/v1/audit", "/v1/stream",
	"/v1/civilization/identities", "/v1/civilization/public-identity", "/v1/civilization/controller-binding",
	"/v1/civilization/profile", "/v1/civilization/briefing", "/v1/supervision/identities",
	"/v1/supervision/home", "/v1/supervision/briefing", "/v1/core/missions", "/v1/core/missions/my",
	"/v1/supervision/missions", "/v1/state", "/v1/game/status",
}

// FuzzRouteQuery sends GET requests with fuzzed query strings to every
// route that reads a query, on a node wired as serve wires it (read models,
// commands, the embedded NATS stream) and holding an identity, a binding and
// a mission, and holds that no query string makes a route fail (5xx); that
// every refusal is a JSON error with a code whose field, when it names one,
// is a parameter the query holds (or the missing one); that a query
// checkQuery refuses is 400 invalid_query on every route; and that the
// stream refuses a bad since or after_seq before it asks for the upgrade.
func FuzzRouteQuery(f *testing.F) {
	for _, r := range docRequests(f) {
		for i, p := range routeQueryPaths {
			if p == r.path {
				f.Add(uint8(i), r.query)
			}
		}
	}
	for i, s := range queryParserSeeds {
		f.Add(uint8(i), s)
	}
	for _, s := range []string{"public_id=ada", "agent_did=did:key:z6MkneZpyJVB1FZyREw8YpUejYMGyCqJXvCfdDWAv2TCoiSK",
		"after_seq=1", "after_seq=99999", "since=2026-11-21T23:05:25Z", "type=mission.*&since=2000-01-01T00:00:00Z",
		"state=created&limit=1", "public_id=ada&limit=2", "required_role=enforcer&publisher=genesis"} {
		for r := range routeQueryPaths {
			f.Add(uint8(r), s)
		}
	}
	s := fuzzNode(f)
	f.Fuzz(func(t *testing.T, route uint8, raw string) {
		if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return // no such request line reaches a handler
		}
		path := routeQueryPaths[int(route)%len(routeQueryPaths)]
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.URL.RawQuery, r.RequestURI = raw, path+"?"+raw
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		status, body := w.Code, w.Body.Bytes()
		if status == http.StatusTooManyRequests {
			return // a rate limit's answer says nothing of the query
		}
		if status >= 500 {
			t.Fatalf("GET %s?%s: %d %s", path, raw, status, body)
		}
		if status < 400 {
			if path == "/v1/stream" || !json.Valid(body) {
				t.Fatalf("GET %s?%s: %d %s", path, raw, status, body)
			}
			checkListAnswer(t, path, raw, body)
			return
		}
		var e struct {
			Error string  `json:"error"`
			Code  string  `json:"code"`
			Field *string `json:"field"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Code == "" {
			t.Fatalf("GET %s?%s: %d %s is no error body", path, raw, status, body)
		}
		checked := raw
		if path == "/v1/stream" { // its ?token= pairs go before the query is checked
			_, checked, _ = cutQueryToken(raw)
		}
		if checkQuery(checked) != nil && (status != http.StatusBadRequest || e.Code != codeInvalidQuery) {
			t.Fatalf("GET %s?%s: %d %s, want 400 invalid_query", path, raw, status, body)
		}
		if path == "/v1/stream" && status == http.StatusUpgradeRequired {
			q, _ := url.ParseQuery(raw)
			_, errSince := querySince(q)
			seq, hasSeq, errSeq := queryAfterSeq(q)
			if errSince != nil || errSeq != nil || hasSeq && (q.Get("since") != "" || seq > s.log.Tip().Seq) {
				t.Fatalf("GET %s?%s: the stream took a query it should refuse", path, raw)
			}
		}
		if e.Field == nil || e.Code == "missing_field" {
			return
		}
		if !queryNames(raw)[*e.Field] {
			t.Fatalf("GET %s?%s: %d %s names a parameter the query does not have", path, raw, status, body)
		}
	})
}

// checkListAnswer holds a 200 list to the query that asked for it: no more
// items than limit, and each item matching every filter given.
func checkListAnswer(t *testing.T, path, raw string, body []byte) {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("GET %s?%s: answered 200 to a query that does not parse", path, raw)
	}
	limit := defaultLimit
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	switch path {
	case "/v1/events":
		var page struct {
			Events []struct {
				Type      string `json:"type"`
				Timestamp string `json:"timestamp"`
			} `json:"events"`
		}
		if err := json.Unmarshal(body, &page); err != nil || len(page.Events) > limit {
			t.Fatalf("GET %s?%s: %d events for limit %d (%v)", path, raw, len(page.Events), limit, err)
		}
		since, _ := querySince(q)
		typ := q.Get("type")
		for _, ev := range page.Events {
			ts, err := time.Parse(time.RFC3339Nano, ev.Timestamp)
			prefix, wild := strings.CutSuffix(typ, "*")
			switch {
			case err != nil || !since.IsZero() && !ts.After(since):
				t.Fatalf("GET %s?%s: event at %s", path, raw, ev.Timestamp)
			case typ != "" && !wild && ev.Type != typ, wild && !strings.HasPrefix(ev.Type, prefix):
				t.Fatalf("GET %s?%s: event of type %s", path, raw, ev.Type)
			}
		}
	case "/v1/core/missions", "/v1/supervision/missions":
		var page struct {
			Missions []map[string]any `json:"missions"`
		}
		if err := json.Unmarshal(body, &page); err != nil || len(page.Missions) > limit {
			t.Fatalf("GET %s?%s: %d missions for limit %d (%v)", path, raw, len(page.Missions), limit, err)
		}
		for _, m := range page.Missions {
			for _, name := range []string{"state", "subnet_id", "domain", "required_role", "publisher"} {
				if v := q.Get(name); v != "" && m[name] != v {
					t.Fatalf("GET %s?%s: mission with %s %v", path, raw, name, m[name])
				}
			}
		}
	}
}

// queryNames are the parameter names of raw as an error may name them: as
// sent, unescaped, and cut as echoName cuts them.
func queryNames(raw string) map[string]bool {
	names := map[string]bool{}
	for pair := range strings.SplitSeq(raw, "&") {
		rawName, _, _ := strings.Cut(pair, "=")
		names[echoName(rawName)] = true
		if name, err := url.QueryUnescape(rawName); err == nil {
			names[name], names[echoName(name)] = true, true
		}
	}
	return names
}

// fuzzNode is a server wired as serve wires it, with one bound identity
// (ada) and one mission of genesis, for the fuzz targets that need routes.
func fuzzNode(f *testing.F) *Server {
	f.Helper()
	key := ed25519.NewKeyFromSeed(testSeed)
	st, err := stream.Start(stream.Options{NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)), Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	c, err := core.Open(eventlog.Options{InMemory: true, Key: key, Logger: discardLogger(), OnCommit: st.Publish},
		core.Config{Governs: []string{"genesis"}})
	if err != nil {
		st.Close()
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	f.Cleanup(func() { st.Close() })
	s := New(wired(Options{OwnerToken: testToken, Logger: discardLogger(), Governs: []string{"genesis"}, Stream: st}, c))
	f.Cleanup(s.streams.shutdown)
	post := func(path, body string) []byte {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			f.Fatalf("POST %s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	var ada struct {
		AgentDID string `json:"agent_did"`
	}
	if err := json.Unmarshal(post("/v1/civilization/bootstrap-identity",
		`{"display_name":"Ada","public_id":"ada","faction":"order","role":"enforcer","home_subnet_id":"genesis"}`), &ada); err != nil {
		f.Fatal(err)
	}
	post("/v1/civilization/controller-binding", `{"agent_did":"`+ada.AgentDID+`","controller_kind":"local_model","controller_ref":"ada@desk"}`)
	post("/v1/core/missions", `{"title":"Catalogue the archive vault","description":"Index the sealed vault.","publisher":"genesis",`+
		`"publisher_kind":"planetary_government","domain":"research","subnet_id":"genesis","required_role":"enforcer",`+
		`"reward":{"agent_credit":40,"reputation":5,"capacity":0,"treasury_share_credit":10},"payload":{"vault":"<&>"}}`)
	return s
}
