package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// appendPadded appends one event per pad length, each with a payload of that
// many bytes of padding, in batches.
func (n *testNode) appendPadded(typ string, pads ...int) []eventlog.Event {
	n.t.Helper()
	var out []eventlog.Event
	for len(pads) > 0 {
		batch := pads[:min(len(pads), 500)]
		pads = pads[len(batch):]
		drafts := make([]eventlog.Draft, len(batch))
		for i, p := range batch {
			drafts[i] = eventlog.Draft{Type: typ, Payload: map[string]any{"pad": strings.Repeat("x", p)}}
		}
		evs, err := n.log.Append(context.Background(), drafts...)
		if err != nil {
			n.t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

// eventsOf decodes a GET /v1/events response.
func eventsOf(t *testing.T, r response) (eventsPage, []eventHead) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d (body %s)", r.status, r.body)
	}
	var p eventsPage
	r.decode(t, &p)
	heads := make([]eventHead, len(p.Events))
	for i, raw := range p.Events {
		if err := json.Unmarshal(raw, &heads[i]); err != nil {
			t.Fatal(err)
		}
	}
	return p, heads
}

// pageThrough pages GET /v1/events with since=<timestamp of the last event> until
// an empty page, checking each page against the budget, and returns the events
// served in order.
func (n *testNode) pageThrough(t *testing.T, filter string, limit, budget int) [][]byte {
	t.Helper()
	var served [][]byte
	since := ""
	for range 10000 {
		q := fmt.Sprintf("?limit=%d%s", limit, filter)
		if since != "" {
			q += "&since=" + url.QueryEscape(since)
		}
		r := n.get("/v1/events" + q)
		p, heads := eventsOf(t, r)
		if cl := r.header.Get("Content-Length"); cl != fmt.Sprint(len(r.body)) {
			t.Errorf("%s: Content-Length %q for a body of %d bytes", q, cl, len(r.body))
		}
		if len(heads) == 0 {
			if p.Total != 0 {
				t.Fatalf("%s: an empty page with total %d", q, p.Total)
			}
			return served
		}
		cut := uint64(len(heads)) < min(uint64(limit), p.Total)
		if got := r.header.Get(PageTruncatedHeader) == "true"; got != cut {
			t.Errorf("%s: %s = %q on a page of %d events, limit %d, total %d",
				q, PageTruncatedHeader, r.header.Get(PageTruncatedHeader), len(heads), limit, p.Total)
		}
		if len(r.body) > budget && len(heads) > 1 {
			t.Errorf("%s: a page of %d events is %d bytes, over the budget of %d", q, len(heads), len(r.body), budget)
		}
		for _, ev := range p.Events {
			served = append(served, ev)
		}
		since = heads[len(heads)-1].Timestamp
	}
	t.Fatal("paging did not end")
	return nil
}

// A page ends at its byte budget, and paging by since= still visits every event
// exactly once, in order, as stored.
func TestEventsPageByteBudget(t *testing.T) {
	const budget = 4 << 10
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = budget }, nil)
	pads := make([]int, 60)
	for i := range pads {
		pads[i] = 700 + 37*(i%11) // events of about 1 KiB, not all alike
	}
	created := n.appendPadded("mission.created", pads...)
	settled := n.appendPadded("mission.settled", pads[:20]...)
	genesis, err := n.log.Event(1)
	if err != nil {
		t.Fatal(err)
	}
	all := append(append([]eventlog.Event{*genesis}, created...), settled...)

	for _, tc := range []struct {
		name, filter string
		want         []eventlog.Event
	}{
		{"all", "", all},
		{"type", "&type=mission.created", created},
		{"prefix", "&type=mission.*", append(append([]eventlog.Event(nil), created...), settled...)},
	} {
		for _, limit := range []int{2, 7, 1000} {
			t.Run(fmt.Sprintf("%s/limit=%d", tc.name, limit), func(t *testing.T) {
				served := n.pageThrough(t, tc.filter, limit, budget)
				if len(served) != len(tc.want) {
					t.Fatalf("served %d events, want %d", len(served), len(tc.want))
				}
				for i, ev := range tc.want {
					if !bytes.Equal(served[i], ev.Raw()) {
						t.Fatalf("event %d of %d served as\n%s\nstored as\n%s", i, len(served), served[i], ev.Raw())
					}
				}
			})
		}
	}

	// The first page is cut, and its body is still exactly the framing around
	// the stored events, with total counting every match.
	r := n.get("/v1/events?limit=1000")
	var want bytes.Buffer
	want.WriteString(`{"events":[`)
	for i, ev := range all {
		next := len(ev.Raw()) + 1
		if i > 0 && want.Len()+next+eventsCloseMax > budget {
			break
		}
		if i > 0 {
			want.WriteByte(',')
		}
		want.Write(ev.Raw())
	}
	fmt.Fprintf(&want, `],"total":%d}`+"\n", len(all))
	if !bytes.Equal(r.body, want.Bytes()) {
		t.Errorf("cut page\n%s\nwant\n%s", r.body, want.Bytes())
	}
	if r.header.Get(PageTruncatedHeader) != "true" {
		t.Errorf("%s missing on a cut page", PageTruncatedHeader)
	}
}

// Under the budget a page is the stored events framed as before, with no
// truncation header.
func TestEventsPageUnderBudgetIsUnchanged(t *testing.T) {
	n := newTestNode(t)
	evs := n.appendEvents(fixtureTypes...)
	r := n.get("/v1/events?type=mission.created")
	var want bytes.Buffer
	want.WriteString(`{"events":[`)
	first := true
	for _, ev := range evs {
		if ev.Type != "mission.created" {
			continue
		}
		if !first {
			want.WriteByte(',')
		}
		first = false
		want.Write(ev.Raw())
	}
	want.WriteString(`],"total":3}` + "\n")
	if !bytes.Equal(r.body, want.Bytes()) {
		t.Errorf("body\n%s\nwant\n%s", r.body, want.Bytes())
	}
	if h := r.header.Get(PageTruncatedHeader); h != "" {
		t.Errorf("%s = %q on a whole page", PageTruncatedHeader, h)
	}
}

// An event larger than the budget is served alone on its page, whole.
func TestEventsOversizedEventIsAlone(t *testing.T) {
	const budget = 4 << 10
	n := newTestNodeWith(t, func(o *Options) { o.PageBytes = budget }, nil)
	before := n.appendPadded("mission.created", 100, 100)
	big := n.appendPadded("mission.completed", 3*budget)[0]
	after := n.appendPadded("mission.created", 100)

	// From genesis: the small events, then the page is cut before the big one.
	p, heads := n.events(t, "?limit=10")
	if len(heads) != 3 || p.Total != 5 {
		t.Fatalf("first page: %d events, total %d; want 3 (genesis and two small), 5", len(heads), p.Total)
	}
	r := n.get("/v1/events?limit=10&since=" + url.QueryEscape(before[1].Timestamp))
	p2, _ := eventsOf(t, r)
	if len(p2.Events) != 1 || !bytes.Equal(p2.Events[0], big.Raw()) || p2.Total != 2 {
		t.Fatalf("second page holds %d events (total %d), want the big one alone", len(p2.Events), p2.Total)
	}
	if len(r.body) <= budget || r.header.Get(PageTruncatedHeader) != "true" {
		t.Errorf("oversized page: %d bytes, %s = %q", len(r.body), PageTruncatedHeader, r.header.Get(PageTruncatedHeader))
	}
	p3, _ := n.events(t, "?limit=10&since="+url.QueryEscape(big.Timestamp))
	if len(p3.Events) != 1 || !bytes.Equal(p3.Events[0], after[0].Raw()) {
		t.Fatalf("third page: %d events, want the last small one", len(p3.Events))
	}
	// By type, with limit 1: the big event alone is simply a full page.
	r = n.get("/v1/events?type=mission.completed&limit=1")
	if h := r.header.Get(PageTruncatedHeader); h != "" || !bytes.Contains(r.body, big.Raw()) {
		t.Errorf("limit=1: %s = %q, body of %d bytes", PageTruncatedHeader, h, len(r.body))
	}
}

// A handler stops reading the store once its client has gone or its deadline
// has passed, rather than finishing a page nobody will get.
func TestEventsStopWithTheRequest(t *testing.T) {
	const events, stopAt = 1000, 10
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{
		{"client gone", 0},
		{"deadline passed", 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var read atomic.Int64
			clientCtx, cancelClient := context.WithCancel(context.Background())
			defer cancelClient()
			n := newTestNodeWith(t, func(o *Options) { o.HandlerTimeout = tc.timeout }, func(s *Server) {
				s.eventsProgress = func(ctx context.Context, seq uint64) {
					if read.Add(1) != stopAt {
						return
					}
					if tc.timeout == 0 {
						cancelClient()
					}
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Second):
						t.Error("the request's context was not canceled")
					}
				}
			})
			pads := make([]int, events-1)
			n.appendPadded("mission.created", pads...)

			req, _ := http.NewRequestWithContext(clientCtx, http.MethodGet, n.url+"/v1/events?limit=1000", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if tc.timeout == 0 {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("request: %v, want it canceled", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Fatalf("status %d, want 503", resp.StatusCode)
				}
			}
			// The handler may still be running: wait until it has returned, so
			// that every event it went on to read is counted.
			returned := make(chan struct{})
			go func() { n.srv.handlers.Wait(); close(returned) }()
			select {
			case <-returned:
			case <-time.After(20 * time.Second):
				t.Fatal("the handler did not return")
			}
			if got := read.Load(); got > stopAt+1 {
				t.Errorf("the handler read %d of %d events; it should stop at %d", got, events, stopAt)
			}
		})
	}
}
