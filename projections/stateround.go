package projections

import "github.com/civnode/civnode/eventlog"

// CommitState is one round of a node's commitment to its state
// (docs/state-proofs.md): it brings log's state tree to the newest durable
// seq and, when the root or the entry count changed, has sign append the
// state.committed for it and return that event's seq once proofs may be
// given against it; only then is the tree written, signed by that event.
// A round that changes nothing a proof shows keeps the commitment signed
// before. It returns the tree's commit, and false when the tree already
// held every durable event.
func CommitState(log *eventlog.Log, sign func(StateCommit) (uint64, error)) (StateCommit, bool, error) {
	last, err := LastStateCommit(log)
	if err != nil {
		return StateCommit{}, false, err
	}
	s, err := OpenStateView(log)
	if err != nil {
		return StateCommit{}, false, err
	}
	through, err := s.Seq()
	s.Close()
	if err != nil || through <= last.ThroughSeq {
		return last, false, err
	}
	r, err := PrepareState(log, through)
	if err != nil {
		return StateCommit{}, false, err
	}
	defer r.Close()
	seq := last.CommitmentSeq
	if r.Root != last.Root || r.Entries != last.Entries {
		if seq, err = sign(r.StateCommit); err != nil {
			return StateCommit{}, false, err
		}
	}
	if err := r.Commit(seq); err != nil {
		return StateCommit{}, false, err
	}
	return r.StateCommit, true, nil
}

// LastStateCommit is log's state tree's commit as the last round left it.
func LastStateCommit(log *eventlog.Log) (StateCommit, error) {
	v, err := log.DerivedView()
	if err != nil {
		return StateCommit{}, err
	}
	defer v.Close()
	return StateTreeCommit(v)
}
