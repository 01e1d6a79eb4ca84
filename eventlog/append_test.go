package eventlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
)

// TestConcurrentAppends: many goroutines appending at once produce one gap-free,
// verifying chain, every caller gets its own events, and multi-draft calls stay
// contiguous.
func TestConcurrentAppends(t *testing.T) {
	var mu sync.Mutex
	var committed []Event
	l := openMem(t, Options{OnCommit: func(evs []Event) error {
		mu.Lock()
		committed = append(committed, evs...)
		mu.Unlock()
		return nil
	}})
	const workers, each = 32, 50
	got := make([][]Event, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := 1 + i%3
				drafts := make([]Draft, n)
				for k := range drafts {
					drafts[k] = draft("test.concurrent", "worker", w, "i", i, "k", k)
				}
				evs, err := l.Append(context.Background(), drafts...)
				if err != nil {
					t.Error(err)
					return
				}
				for k := 1; k < len(evs); k++ {
					if evs[k].Seq != evs[k-1].Seq+1 {
						t.Errorf("drafts of one call split: %d then %d", evs[k-1].Seq, evs[k].Seq)
					}
				}
				got[w] = append(got[w], evs...)
			}
		}()
	}
	wg.Wait()
	total := 0
	seen := map[uint64]bool{}
	for _, evs := range got {
		for _, ev := range evs {
			if seen[ev.Seq] {
				t.Fatalf("seq %d returned twice", ev.Seq)
			}
			seen[ev.Seq] = true
			total++
		}
	}
	if tip := l.Tip(); tip.Seq != uint64(total)+1 {
		t.Fatalf("tip = %d, want %d", tip.Seq, total+1)
	}
	rep, err := l.Verify(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Events != uint64(total)+1 {
		t.Fatalf("verified %d events, want %d", rep.Events, total+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(committed) != total {
		t.Fatalf("OnCommit saw %d events, want %d", len(committed), total)
	}
	for i, ev := range committed {
		if ev.Seq != uint64(i)+2 {
			t.Fatalf("OnCommit out of order at %d: seq %d", i, ev.Seq)
		}
	}
}

// TestDecideSerialised: decisions see each other even before they are durable, so
// of many racing "claims" exactly one succeeds.
func TestDecideSerialised(t *testing.T) {
	l := openMem(t, Options{})
	claimed := false
	errTaken := errors.New("taken")
	var wins, losses int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Decide(context.Background(), func() ([]Draft, error) {
				if claimed {
					return nil, errTaken
				}
				claimed = true
				return []Draft{draft("mission.accepted", "claimer", fmt.Sprint(i))}, nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, errTaken):
				losses++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || losses != 15 {
		t.Fatalf("wins=%d losses=%d, want 1 and 15", wins, losses)
	}
	if tip := l.Tip(); tip.Seq != 2 {
		t.Fatalf("tip = %d, want 2", tip.Seq)
	}
}

// TestInvalidDrafts: a bad draft appends nothing, including the good drafts of
// the same call.
func TestInvalidDrafts(t *testing.T) {
	l := openMem(t, Options{})
	bad := []Draft{
		{Type: "NoDots", Payload: map[string]int{}},
		{Type: "mission.created", Payload: []int{1}},
		{Type: "mission.created", Payload: "text"},
		{Type: "mission.created", Payload: map[string]any{"f": func() {}}},
		{Type: "mission..created", Payload: map[string]int{}},
	}
	for _, d := range bad {
		_, err := l.Append(context.Background(), draft("test.good", "n", 1), d)
		if !errors.Is(err, ErrInvalidDraft) {
			t.Errorf("%+v: err = %v, want ErrInvalidDraft", d, err)
		}
	}
	if tip := l.Tip(); tip.Seq != 1 {
		t.Fatalf("tip = %d after rejected drafts, want 1", tip.Seq)
	}
}

// TestTimestampsStrictlyIncrease with a clock that stalls and steps backwards.
func TestTimestampsStrictlyIncrease(t *testing.T) {
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	readings := []time.Duration{0, 0, -time.Hour, 5 * time.Millisecond, 5 * time.Millisecond, -time.Second, time.Second}
	var i int
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		d := readings[min(i, len(readings)-1)]
		i++
		return base.Add(d)
	}
	l := openMem(t, Options{Now: clock})
	for n := range 6 {
		mustAppend(t, l, draft("test.tick", "n", n))
	}
	var prev int64
	err := l.Scan(1, l.Tip().Seq, func(ev *Event) error {
		us, ok := parseTimestamp(ev.Timestamp)
		if !ok || us <= prev {
			return fmt.Errorf("seq %d timestamp %s does not increase", ev.Seq, ev.Timestamp)
		}
		prev = us
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReopen: the chain continues across Close/Open with the same tip and counts.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, draft("test.a", "n", 1), draft("test.b", "n", 2))
	tip := l.Tip()
	l.Close()
	l, err = Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Tip() != tip {
		t.Fatalf("tip after reopen = %+v, want %+v", l.Tip(), tip)
	}
	ev := mustAppend(t, l, draft("test.a", "n", 3))[0]
	if ev.Seq != 4 || ev.PrevHash != tip.ID {
		t.Fatalf("appended after reopen: seq %d prev %s", ev.Seq, ev.PrevHash)
	}
	if _, total, _ := l.Query(Query{Type: "test.a", Limit: 10}); total != 2 {
		t.Fatalf("type count after reopen = %d, want 2", total)
	}
	if _, err := l.Verify(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	l, err := Open(Options{InMemory: true, Key: seedKey(t, vectorSeed)})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := l.Append(context.Background(), draft("test.x", "n", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("err = %v, want ErrClosed", err)
	}
}

func TestRecords(t *testing.T) {
	l := openMem(t, Options{})
	for _, id := range []string{"b", "a", "c"} {
		if err := l.PutRecord("token", id, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	l.PutRecord("tokenx", "z", []byte("other kind"))
	l.PutRecord("token", "a", []byte("a2"))
	got, err := l.Records("token")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0]) != "a2" || string(got[2]) != "c" {
		t.Fatalf("records = %q", got)
	}
	if tip := l.Tip(); tip.Seq != 1 {
		t.Fatalf("records reached the chain: tip %d", tip.Seq)
	}
}

// TestCanonicalDraft: a pre-canonicalised payload is appended byte for byte as
// Canonicalize produced it, equal to what the log makes of the plain value.
func TestCanonicalDraft(t *testing.T) {
	l := openMem(t, Options{})
	v := map[string]any{"b": "<&>", "a": []int{1, 2}}
	c, err := Canonicalize(v)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := l.Decide(context.Background(), func() ([]Draft, error) {
		return []Draft{{Type: "test.pre", Payload: c}, {Type: "test.plain", Payload: v}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(evs[0].Payload) != string(evs[1].Payload) || string(evs[0].Payload) != `{"a":[1,2],"b":"<&>"}` {
		t.Fatalf("payloads %s and %s", evs[0].Payload, evs[1].Payload)
	}
	if _, err := l.Append(context.Background(), Draft{Type: "test.zero", Payload: Canonical{}}); !errors.Is(err, ErrInvalidDraft) {
		t.Fatalf("zero Canonical: err = %v", err)
	}
	if _, err := Canonicalize([]int{1}); !errors.Is(err, ErrInvalidDraft) {
		t.Fatalf("array payload: err = %v", err)
	}
}

// TestSignedBytes: an appended event and the same event read back give U, the
// bytes its id hashes and its signature signs, which is the event's JCS without
// id and signature; an event built by hand has none.
func TestSignedBytes(t *testing.T) {
	l := openMem(t, Options{})
	evs, err := l.Append(context.Background(), draft("test.signed", "note", "zürich ✓", "n", 7))
	if err != nil {
		t.Fatal(err)
	}
	read, err := l.Event(evs[0].Seq)
	if err != nil {
		t.Fatal(err)
	}
	for name, ev := range map[string]*Event{"appended": &evs[0], "read": read} {
		u := ev.SignedBytes()
		if u == nil {
			t.Fatalf("%s: no signed bytes", name)
		}
		if id := sha256.Sum256(u); hex.EncodeToString(id[:]) != ev.ID {
			t.Errorf("%s: sha256(U) is not the id %s", name, ev.ID)
		}
		sig, err := base64.StdEncoding.DecodeString(ev.Signature)
		if err != nil || !ed25519.Verify(l.PublicKey(), u, sig) {
			t.Errorf("%s: the signature does not verify over U (%v)", name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(ev.Raw(), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "id")
		delete(m, "signature")
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(u, want) {
			t.Errorf("%s: U is\n%s\nwant the JCS of the event without id and signature\n%s", name, u, want)
		}
	}
	if u := (&Event{ID: evs[0].ID, Payload: evs[0].Payload}).SignedBytes(); u != nil {
		t.Errorf("an event built by hand gave signed bytes %q", u)
	}
}
