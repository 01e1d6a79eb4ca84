package eventlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
)

// SealAt is the seal of the chain's first size events, signed now: the seal
// a publisher writes beside a checkpoint of an older tree than the tip (the
// newest one its witnesses cosigned), so that a mirror reading both finds
// them of one tree. A mirror's log, which never signs, answers its stored
// seal when it is of size events, else ErrReadOnly.
func (l *Log) SealAt(size int64) (Seal, error) {
	tip := l.Tip()
	if size < 1 || uint64(size) > tip.Seq {
		return Seal{}, fmt.Errorf("seal of %d events: the chain holds %d: %w", size, tip.Seq, ErrNotFound)
	}
	if l.ReadOnly() {
		s, err := l.Seal()
		if err != nil {
			return Seal{}, err
		}
		if s.EventCount != uint64(size) {
			return Seal{}, fmt.Errorf("seal of %d events: a mirror holds the origin's seal of %d only: %w", size, s.EventCount, ErrReadOnly)
		}
		return s, nil
	}
	if uint64(size) == tip.Seq {
		return l.exportSeal(l.now())
	}
	ev, err := l.Event(uint64(size))
	if err != nil {
		return Seal{}, fmt.Errorf("seal of %d events: %w", size, err)
	}
	_, checkpoint, err := l.TreeCheckpointAt(size)
	if err != nil {
		return Seal{}, fmt.Errorf("seal of %d events: checkpoint: %w", size, err)
	}
	s := Seal{EventCount: uint64(size), RootHash: l.RootHash(), TipHash: ev.ID,
		GeneratedAt: l.now().UTC().Format(TimeLayout), Checkpoint: string(checkpoint)}
	s.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(l.key, sealedBytes(s.RootHash, s.TipHash, s.GeneratedAt)))
	return s, nil
}
