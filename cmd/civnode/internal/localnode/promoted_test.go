package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// promotedEvents are the chain's node.promoted payloads, oldest first.
func promotedEvents(t *testing.T, chain *eventlog.Log) []events.NodePromoted {
	t.Helper()
	evs, _, err := chain.Query(eventlog.Query{Type: events.TypeNodePromoted, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.NodePromoted
	for _, ev := range evs {
		var p events.NodePromoted
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// recordPromoted appends node.promoted once, naming the data dir's instance
// and the size it took over at, only on a data dir marked by promote, and
// never a second time however often it runs.
func TestRecordPromoted(t *testing.T) {
	ctx := context.Background()
	chain := openMemChain(t)
	for range 3 {
		if _, err := chain.Append(ctx, eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": 1}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := datadir.Dir(filepath.Join(t.TempDir(), "node"))
	if err := os.MkdirAll(string(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := recordPromoted(ctx, chain, dir); err != nil {
		t.Fatal(err)
	}
	if got := promotedEvents(t, chain); len(got) != 0 {
		t.Fatalf("a data dir not promoted recorded %v", got)
	}
	if err := dir.MarkRecovered(datadir.RecoveredByRestore); err != nil {
		t.Fatal(err)
	}
	if err := recordPromoted(ctx, chain, dir); err != nil {
		t.Fatal(err)
	}
	if got := promotedEvents(t, chain); len(got) != 0 {
		t.Fatalf("a restored data dir recorded %v", got)
	}
	if err := dir.MarkRecovered(datadir.RecoveredByPromote); err != nil {
		t.Fatal(err)
	}
	instance, err := dir.InstanceID()
	if err != nil {
		t.Fatal(err)
	}
	size := chain.TreeSize()
	for range 2 { // a restart before the fork guard cleared the mark
		if err := recordPromoted(ctx, chain, dir); err != nil {
			t.Fatal(err)
		}
	}
	got := promotedEvents(t, chain)
	if len(got) != 1 || got[0].Instance != instance || got[0].TreeSize != size {
		t.Fatalf("node.promoted %+v, want one of instance %s at tree size %d", got, instance, size)
	}
	if tip := chain.Tip().Seq; tip != uint64(size)+1 {
		t.Errorf("tip seq %d, want node.promoted at %d", tip, size+1)
	}
	// Another instance promoted later, on a copy of this data dir.
	if _, err := dir.NewInstanceID(); err != nil {
		t.Fatal(err)
	}
	if err := recordPromoted(ctx, chain, dir); err != nil {
		t.Fatal(err)
	}
	if got := promotedEvents(t, chain); len(got) != 2 || got[1].Instance == instance {
		t.Fatalf("a second instance's node.promoted: %+v", got)
	}
}

// SupersededBy names the instance of a node.promoted of another instance,
// and nothing for one's own or another type.
func TestSupersededBy(t *testing.T) {
	payload, err := json.Marshal(events.NodePromoted{Instance: "b", TreeSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	promoted := eventlog.Event{Type: events.TypeNodePromoted, Payload: payload}
	if other, ok := SupersededBy(promoted, "a"); !ok || other != "b" {
		t.Errorf("another instance's node.promoted: %q %v, want b true", other, ok)
	}
	if other, ok := SupersededBy(promoted, "b"); ok {
		t.Errorf("its own node.promoted: %q %v, want false", other, ok)
	}
	if other, ok := SupersededBy(eventlog.Event{Type: events.TypePeerConnected, Payload: payload}, "a"); ok {
		t.Errorf("another type: %q %v, want false", other, ok)
	}
}

// supersededAtOpen names the newest node.promoted's instance when it is
// not the data dir's own, except on a data dir promote made whose own
// node.promoted is yet to come.
func TestSupersededAtOpen(t *testing.T) {
	ctx := context.Background()
	chain := openMemChain(t)
	dir := datadir.Dir(t.TempDir())
	write := func(id string) {
		t.Helper()
		if err := os.WriteFile(dir.InstancePath(), []byte(id+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	promote := func(id string) {
		t.Helper()
		if _, err := chain.Append(ctx, eventlog.Draft{Type: events.TypeNodePromoted, Payload: events.NodePromoted{Instance: id, TreeSize: chain.TreeSize()}}); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what, other string) {
		t.Helper()
		got, err := supersededAtOpen(chain, dir)
		if err != nil || got != other {
			t.Fatalf("%s: %q %v, want %q", what, got, err, other)
		}
	}
	write("a")
	want("no promotion", "")
	promote("b")
	want("the old primary a after b's promotion", "b")
	write("b")
	want("b itself", "")
	write("c")
	if err := dir.MarkRecovered(datadir.RecoveredByPromote); err != nil {
		t.Fatal(err)
	}
	want("c, promoted, before its node.promoted", "")
	if err := recordPromoted(ctx, chain, dir); err != nil {
		t.Fatal(err)
	}
	want("c after its node.promoted", "")
	promote("d")
	want("c after d's promotion, its mark not yet cleared", "d")
	if err := dir.ClearRecovered(); err != nil {
		t.Fatal(err)
	}
	want("c after d's promotion", "d")
}

// A first write (node.promoted) that fails holds the log again and keeps
// the recovered mark, so the node never appends without it; the next
// release tries it again.
func TestReleaseKeepsTheMarkWhenTheFirstWriteFails(t *testing.T) {
	ctx := context.Background()
	chain := openMemChain(t)
	dir := datadir.Dir(t.TempDir())
	if err := dir.MarkRecovered(datadir.RecoveredByPromote); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("disk full")
	calls := 0
	g := newForkGuard(&forkGuard{chain: chain, dir: dir, logger: slog.New(slog.DiscardHandler), recovered: datadir.RecoveredByPromote,
		writable: func(ctx context.Context) error {
			calls++
			if calls == 1 {
				return failed
			}
			return recordPromoted(ctx, chain, dir)
		}})
	g.release(ctx)
	if b := chain.Held(); b == nil || b.Reason != heldWaiting || !strings.Contains(b.Seen, "disk full") {
		t.Fatalf("after a failed first write the hold is %+v, want waiting with the error", b)
	}
	if how, err := dir.Recovered(); err != nil || how != datadir.RecoveredByPromote {
		t.Fatalf("after a failed first write the mark is %q %v", how, err)
	}
	g.release(ctx)
	if b := chain.Held(); b != nil {
		t.Fatalf("after the first write the log holds: %+v", b)
	}
	if how, err := dir.Recovered(); err != nil || how != "" {
		t.Fatalf("after the first write the mark is %q %v, want none", how, err)
	}
	if got := promotedEvents(t, chain); calls != 2 || len(got) != 1 {
		t.Fatalf("%d calls, node.promoted %+v; want 2 calls and one event", calls, got)
	}
}
