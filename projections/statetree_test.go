package projections_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/projections"
	"github.com/civnode/civnode/statemap"
)

// fullStateRoot is the root of l's whole state map, hashed afresh from
// StateEntries in a store of its own.
func fullStateRoot(t testing.TB, l *eventlog.Log) (statemap.Hash, uint64, map[string]string) {
	t.Helper()
	entries := stateEntries(t, l)
	var changes []statemap.Change
	for k, v := range entries {
		changes = append(changes, statemap.Put(k, []byte(v)))
	}
	slices.SortFunc(changes, func(a, b statemap.Change) int { return bytes.Compare(a.KeyHash[:], b.KeyHash[:]) })
	root, n, err := statemap.Update(&statemap.MemStore{}, &statemap.MemStore{}, changes)
	if err != nil {
		t.Fatal(err)
	}
	return root, n, entries
}

// durableSeq is the seq the log's durable models have applied.
func durableSeq(t testing.TB, l *eventlog.Log) uint64 {
	t.Helper()
	s, err := projections.OpenStateView(l)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seq, err := s.Seq()
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestStateTreeRounds keeps the state tree over a chain of every event type,
// a round every few events: each round's root is the root of the whole map
// hashed afresh, every entry's proof from the stored tree verifies with its
// value, an unknown key's absence verifies, the pending changes are gone,
// and a rebuild of the models, which drops the tree, derives the same root
// in one round.
func TestStateTreeRounds(t *testing.T) {
	c := newChain(t, func(o *eventlog.Options) { o.Models = projections.Folder{State: true} })
	drafts := stateChain(t)
	var last projections.StateCommit
	for i := 0; i < len(drafts); i += 4 {
		if _, err := c.log.Append(context.Background(), drafts[i:min(i+4, len(drafts))]...); err != nil {
			t.Fatal(err)
		}
		through := durableSeq(t, c.log)
		r, err := projections.PrepareState(c.log, through)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(through + 1); err != nil {
			t.Fatal(err)
		}
		want, n, entries := fullStateRoot(t, c.log)
		if r.Root != want || r.Entries != n {
			t.Fatalf("through seq %d: root %s of %d entries, the whole map's %s of %d", through, r.Root, r.Entries, want, n)
		}
		v, err := c.log.DerivedView()
		if err != nil {
			t.Fatal(err)
		}
		got, err := projections.StateTreeCommit(v)
		if err != nil || got != r.StateCommit {
			t.Fatalf("stored commit %+v (%v), want %+v", got, err, r.StateCommit)
		}
		for k, val := range entries {
			value, p, err := projections.ProveState(v, k)
			if err != nil {
				t.Fatal(err)
			}
			if string(value) != val {
				t.Fatalf("%s: the tree holds %s, the map %s", k, value, val)
			}
			if err := statemap.Verify(r.Root, k, value, p); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
		}
		value, p, err := projections.ProveState(v, "mission/no-such-mission")
		if err != nil || value != nil {
			t.Fatalf("an unknown mission: %q, %v", value, err)
		}
		if err := statemap.Verify(r.Root, "mission/no-such-mission", nil, p); err != nil {
			t.Fatalf("absence: %v", err)
		}
		pending := 0
		v.Scan(eventlog.DerivedKey([]byte{'p'}), eventlog.DerivedKey([]byte{'q'}), false, func(_, _ []byte) (bool, error) {
			pending++
			return true, nil
		})
		v.Close()
		if pending != 0 {
			t.Fatalf("through seq %d: %d pending changes left after the round", through, pending)
		}
		last = r.StateCommit
	}
	if last.Entries == 0 {
		t.Fatal("the chain made no entries")
	}
	if _, err := projections.PrepareState(c.log, last.ThroughSeq-1); err == nil {
		t.Error("a round behind the tree was prepared")
	}

	c.rebuild(t)
	r, err := projections.PrepareState(c.log, durableSeq(t, c.log))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Root != last.Root || r.Entries != last.Entries {
		t.Fatalf("after a rebuild, one round gives %s of %d entries, the rounds gave %s of %d", r.Root, r.Entries, last.Root, last.Entries)
	}
}
