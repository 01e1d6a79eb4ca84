package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
)

// StateMismatch is a state.committed whose root, or entry count, the
// chain's own events do not give: a node that signed a wrong state.
type StateMismatch struct {
	// Seq is the commitment's seq, ThroughSeq the seq it commits through.
	Seq, ThroughSeq uint64
	// Signed and Derived are the roots (base64) and entry counts the event
	// states and the events through ThroughSeq give.
	Signed, Derived               string
	SignedEntries, DerivedEntries uint64
}

func (m *StateMismatch) Error() string {
	return fmt.Sprintf("state.committed at seq %d signs root %s of %d entries through seq %d; the chain's events give %s of %d",
		m.Seq, m.Signed, m.SignedEntries, m.ThroughSeq, m.Derived, m.DerivedEntries)
}

// CheckStateCommitments recomputes the root of every state.committed in
// log's chain that the state tree has not passed, in chain order, from the
// changes the folds recorded, and checks it against the signed one; each
// that matches is written as the tree's commit. It returns how many it
// checked, and stops at the first that differs, which it returns as a
// *StateMismatch error with the tree left at the commitment before. The
// folds must have run past every commitment's through_seq (a rebuild, a
// mirror's ingest).
func CheckStateCommitments(ctx context.Context, log *eventlog.Log) (int, error) {
	last, err := LastStateCommit(log)
	if err != nil {
		return 0, err
	}
	type commitment struct {
		seq uint64
		p   events.StateCommitted
	}
	var unchecked []commitment
	_, err = log.QueryRaw(ctx, eventlog.Query{Type: events.TypeStateCommitted, Limit: math.MaxInt, After: last.CommitmentSeq}, func(seq uint64, raw []byte) (bool, error) {
		var ev struct {
			Payload events.StateCommitted `json:"payload"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return false, fmt.Errorf("%s at seq %d: %w", events.TypeStateCommitted, seq, err)
		}
		if ev.Payload.ThroughSeq > last.ThroughSeq || ev.Payload.ThroughSeq == last.ThroughSeq && seq > last.CommitmentSeq {
			unchecked = append(unchecked, commitment{seq, ev.Payload})
		}
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	for i, c := range unchecked {
		if err := ctx.Err(); err != nil {
			return i, err
		}
		if c.p.ThroughSeq >= c.seq {
			return i, &StateMismatch{Seq: c.seq, ThroughSeq: c.p.ThroughSeq, Signed: c.p.StateRoot, SignedEntries: c.p.Entries,
				Derived: "(none: a commitment must come after the events it commits to)"}
		}
		r, err := PrepareState(log, c.p.ThroughSeq)
		if err != nil {
			return i, err
		}
		if got := r.Root.String(); got != c.p.StateRoot || r.Entries != c.p.Entries {
			r.Close()
			return i, &StateMismatch{Seq: c.seq, ThroughSeq: c.p.ThroughSeq, Signed: c.p.StateRoot, SignedEntries: c.p.Entries,
				Derived: got, DerivedEntries: r.Entries}
		}
		if err := r.Commit(c.seq); err != nil {
			return i, err
		}
	}
	return len(unchecked), nil
}
