package eventlog

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// rawPage collects what QueryRaw hands over, copying raw as the contract asks.
type rawPage struct {
	seqs []uint64
	raws [][]byte
}

func (p *rawPage) add(seq uint64, raw []byte) (bool, error) {
	p.seqs = append(p.seqs, seq)
	p.raws = append(p.raws, bytes.Clone(raw))
	return true, nil
}

// QueryRaw selects what Query selects, and hands over the stored bytes.
func TestQueryRawMatchesQuery(t *testing.T) {
	l := queryLog(t)
	ev10, _ := l.Event(10)
	for _, q := range []Query{
		{Limit: 1000},
		{Limit: 5},
		{Since: ev10.Time(), Limit: 1000},
		{Since: ev10.Time().Add(-time.Millisecond), Limit: 3},
		{Type: "mission.settled", Limit: 1000},
		{Type: "identity.updated", Since: ev10.Time(), Limit: 2},
		{Type: "mission.*", Since: ev10.Time(), Limit: 5},
		{Type: "mission.*", Since: ev10.Time(), Until: 30, Limit: 1000},
		{Type: "oracle.settled", Limit: 10},
		{Limit: 0},
		{Type: "mission.settled", Limit: 0},
		{Since: time.Now().Add(24 * 365 * time.Hour), Limit: 10},
	} {
		evs, total, err := l.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		var p rawPage
		rawTotal, err := l.QueryRaw(context.Background(), q, p.add)
		if err != nil {
			t.Fatal(err)
		}
		if rawTotal != total || len(p.seqs) != len(evs) {
			t.Fatalf("%+v: QueryRaw gave %d events, total %d; Query %d, %d", q, len(p.seqs), rawTotal, len(evs), total)
		}
		for i, ev := range evs {
			stored, err := l.Event(ev.Seq)
			if err != nil {
				t.Fatal(err)
			}
			if p.seqs[i] != ev.Seq || !bytes.Equal(p.raws[i], stored.Raw()) {
				t.Errorf("%+v: event %d: seq %d, %s; want seq %d, %s", q, i, p.seqs[i], p.raws[i], ev.Seq, stored.Raw())
			}
		}
	}
}

// The bytes handed over are the ones Append returned, byte for byte.
func TestQueryRawIsStoredBytes(t *testing.T) {
	l := openMem(t, Options{})
	evs := mustAppend(t, l, draft("mission.created", "note", "<&> \u2028 é"), draft("mission.completed", "result", "\x01\x1f"))
	var p rawPage
	if _, err := l.QueryRaw(context.Background(), Query{Since: time.UnixMicro(0), Type: "mission.*", Limit: 10}, p.add); err != nil {
		t.Fatal(err)
	}
	if len(p.raws) != 2 {
		t.Fatalf("%d events, want 2", len(p.raws))
	}
	for i, ev := range evs {
		if !bytes.Equal(p.raws[i], ev.Raw()) {
			t.Errorf("event %d handed over as\n%s\nappended as\n%s", ev.Seq, p.raws[i], ev.Raw())
		}
	}
}

// fn ends a query early by returning false (the total still counts every
// match) or an error, which QueryRaw returns; a done context ends it too.
func TestQueryRawStops(t *testing.T) {
	l := queryLog(t)
	for _, q := range []Query{{Limit: 1000}, {Type: "mission.*", Limit: 1000}} {
		calls := 0
		total, err := l.QueryRaw(context.Background(), q, func(uint64, []byte) (bool, error) {
			calls++
			return calls < 3, nil
		})
		if err != nil || calls != 3 {
			t.Errorf("%+v: stopped after %d calls with %v; want 3, nil", q, calls, err)
		}
		if want := map[string]uint64{"": 61, "mission.*": 40}[q.Type]; total != want {
			t.Errorf("%+v: total %d after stopping early, want %d", q, total, want)
		}

		boom := errors.New("boom")
		calls = 0
		if _, err := l.QueryRaw(context.Background(), q, func(uint64, []byte) (bool, error) {
			calls++
			return true, boom
		}); !errors.Is(err, boom) || calls != 1 {
			t.Errorf("%+v: fn's error: %d calls, %v", q, calls, err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		calls = 0
		_, err = l.QueryRaw(ctx, q, func(uint64, []byte) (bool, error) {
			calls++
			if calls == 5 {
				cancel()
			}
			return true, nil
		})
		if !errors.Is(err, context.Canceled) || calls != 5 {
			t.Errorf("%+v: canceled after 5 events, got %d calls and %v", q, calls, err)
		}
	}
}

// A query sees one consistent chain while appends go on: its events run from
// seq 1 without a gap, and the total counts exactly that view.
func TestQueryRawConsistentUnderAppends(t *testing.T) {
	l := openMem(t, Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			if _, err := l.Append(context.Background(), draft("mission.created", "i", i), draft("mission.settled", "i", i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for queries := 0; ; queries++ {
		select {
		case <-done:
			if queries < 10 {
				t.Logf("only %d queries ran during the appends", queries)
			}
			return
		default:
		}
		var p rawPage
		total, err := l.QueryRaw(context.Background(), Query{Limit: 1 << 30}, p.add)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(p.seqs)) != total {
			t.Fatalf("%d events for a total of %d", len(p.seqs), total)
		}
		for i, s := range p.seqs {
			if s != uint64(i+1) {
				t.Fatalf("event %d has seq %d", i, s)
			}
		}
		var q rawPage
		total, err = l.QueryRaw(context.Background(), Query{Type: "mission.*", Limit: 1 << 30}, q.add)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(q.seqs)) != total || total%2 != 0 {
			t.Fatalf("mission.*: %d events for a total of %d (appended in pairs)", len(q.seqs), total)
		}
	}
}

// A type filter reaches near matches by stepping and far ones by seeking; both
// find exactly the events of the type, in order.
func TestQueryRawTypeNearAndFar(t *testing.T) {
	l := openMem(t, Options{})
	var drafts []Draft
	for i := range 400 {
		typ := "mission.created"
		switch {
		case i%maxStep == 3, i%97 == 5, i >= 300 && i%2 == 0:
			typ = "mission.settled" // gaps of maxStep, of 97 and of 2
		}
		drafts = append(drafts, draft(typ, "i", i))
	}
	evs := mustAppend(t, l, drafts...)
	var want []uint64
	for _, ev := range evs {
		if ev.Type == "mission.settled" {
			want = append(want, ev.Seq)
		}
	}
	for _, limit := range []int{1, 7, 1000} {
		var p rawPage
		total, err := l.QueryRaw(context.Background(), Query{Type: "mission.settled", Limit: limit}, p.add)
		if err != nil {
			t.Fatal(err)
		}
		n := min(limit, len(want))
		if total != uint64(len(want)) || !slices.Equal(p.seqs, want[:n]) {
			t.Fatalf("limit %d: seqs %v, total %d; want %v, %d", limit, p.seqs, total, want[:n], len(want))
		}
		for i, raw := range p.raws {
			if !bytes.Equal(raw, evs[p.seqs[i]-2].Raw()) {
				t.Fatalf("seq %d: wrong bytes", p.seqs[i])
			}
		}
	}
}
