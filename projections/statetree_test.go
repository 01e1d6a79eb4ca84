package projections_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
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
// value, an unknown key's absence verifies, the changes kept are one an
// entry, and a rebuild of the models, which drops the tree, derives the same root
// in one round.
func TestStateTreeRounds(t *testing.T) {
	c := newChain(t, func(o *eventlog.Options) { o.Models = projections.Folder{State: true} })
	drafts := slices.DeleteFunc(stateChain(t), func(d eventlog.Draft) bool { return d.Type == events.TypeStateCommitted })
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
			value, p, err := projections.ProveState(c.log, v, k)
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
		value, p, err := projections.ProveState(c.log, v, "mission/no-such-mission")
		if err != nil || value != nil {
			t.Fatalf("an unknown mission: %q, %v", value, err)
		}
		if err := statemap.Verify(r.Root, "mission/no-such-mission", nil, p); err != nil {
			t.Fatalf("absence: %v", err)
		}
		// Of the changes the folds recorded, the round keeps one an entry:
		// the one holding its value.
		kept := 0
		v.Scan(eventlog.DerivedKey([]byte{'p'}), eventlog.DerivedKey([]byte{'q'}), false, func(_, _ []byte) (bool, error) {
			kept++
			return true, nil
		})
		v.Close()
		if kept != len(entries) {
			t.Fatalf("through seq %d: %d changes kept after the round for %d entries", through, kept, len(entries))
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

// TestStateTreeBehindTheModels folds a chain of every event type to its
// end first and only then brings the tree through the seqs it passed, one
// after another, as a node whose committer lags its writes and a mirror or
// a replay do: each round's root is the whole map's as it stood at that
// seq, and every proof hands out the value an entry had then (the change
// the tree names, however many followed it) and verifies, while an entry
// made later is proved absent.
func TestStateTreeBehindTheModels(t *testing.T) {
	c := newChain(t, func(o *eventlog.Options) { o.Models = projections.Folder{State: true} })
	drafts := slices.DeleteFunc(stateChain(t), func(d eventlog.Draft) bool { return d.Type == events.TypeStateCommitted })
	type point struct {
		seq     uint64
		root    statemap.Hash
		entries map[string]string
	}
	var points []point
	for i := 0; i < len(drafts); i += 3 {
		if _, err := c.log.Append(context.Background(), drafts[i:min(i+3, len(drafts))]...); err != nil {
			t.Fatal(err)
		}
		root, _, entries := fullStateRoot(t, c.log)
		points = append(points, point{durableSeq(t, c.log), root, entries})
	}
	final := points[len(points)-1].entries
	for _, pt := range points {
		r, err := projections.PrepareState(c.log, pt.seq)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Commit(0); err != nil {
			t.Fatal(err)
		}
		if r.Root != pt.root || r.Entries != uint64(len(pt.entries)) {
			t.Fatalf("through seq %d: root %s of %d entries, the map then %s of %d", pt.seq, r.Root, r.Entries, pt.root, len(pt.entries))
		}
		v, err := c.log.DerivedView()
		if err != nil {
			t.Fatal(err)
		}
		for k := range maps.Keys(final) {
			value, p, err := projections.ProveState(c.log, v, k)
			if err != nil {
				t.Fatal(err)
			}
			want, held := pt.entries[k]
			if held && string(value) != want || !held && value != nil {
				t.Fatalf("through seq %d: %s is %s, was %s (%v)", pt.seq, k, value, want, held)
			}
			if err := statemap.Verify(r.Root, k, value, p); err != nil {
				t.Fatalf("through seq %d: %s: %v", pt.seq, k, err)
			}
		}
		v.Close()
	}
}

// commitState runs a round through the durable seq and appends its
// state.committed as the node's committer does; wrong, if set, is signed
// instead of the root.
func commitState(t *testing.T, l *eventlog.Log, wrong string) uint64 {
	t.Helper()
	through := durableSeq(t, l)
	r, err := projections.PrepareState(l, through)
	if err != nil {
		t.Fatal(err)
	}
	root := r.Root.String()
	if wrong != "" {
		root = wrong
	}
	evs, err := l.Append(context.Background(), eventlog.Draft{Type: events.TypeStateCommitted,
		Payload: events.StateCommitted{ThroughSeq: through, StateRoot: root, Entries: r.Entries}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(evs[0].Seq); err != nil {
		t.Fatal(err)
	}
	return evs[0].Seq
}

// TestCheckStateCommitments: after a rebuild, which drops the tree, every
// state.committed of the chain is recomputed from the events and found
// equal; a commitment that signs another root is named, with the root the
// events give, and the tree stays at the commitment before it.
func TestCheckStateCommitments(t *testing.T) {
	c := newChain(t, func(o *eventlog.Options) { o.Models = projections.Folder{State: true} })
	// The golden chain's own state.committed signs a root of that chain.
	drafts := slices.DeleteFunc(stateChain(t), func(d eventlog.Draft) bool { return d.Type == events.TypeStateCommitted })
	commitments := 0
	for i := 0; i < len(drafts); i += 5 {
		if _, err := c.log.Append(context.Background(), drafts[i:min(i+5, len(drafts))]...); err != nil {
			t.Fatal(err)
		}
		commitState(t, c.log, "")
		commitments++
	}
	c.rebuild(t)
	n, err := projections.CheckStateCommitments(context.Background(), c.log)
	if err != nil || n != commitments {
		t.Fatalf("checked %d of %d commitments: %v", n, commitments, err)
	}

	c.append(events.TypeIdentityUpdated, events.IdentityUpdated{AgentDID: did(1), PublicID: "ada", DisplayName: "Ada L."})
	forged := statemap.HashValue([]byte("forged")).String()
	seq := commitState(t, c.log, forged)
	c.rebuild(t)
	n, err = projections.CheckStateCommitments(context.Background(), c.log)
	var m *projections.StateMismatch
	if !errors.As(err, &m) || n != commitments || m.Seq != seq || m.Signed != forged || m.Derived == forged {
		t.Fatalf("a forged root: checked %d, %v; want the commitment at seq %d named", n, err, seq)
	}
	v, err := c.log.DerivedView()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if got, err := projections.StateTreeCommit(v); err != nil || got.CommitmentSeq >= seq {
		t.Fatalf("the tree went past the forged commitment: %+v %v", got, err)
	}
}
