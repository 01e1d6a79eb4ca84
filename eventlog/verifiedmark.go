package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A verified mark (the "checkpoint" civnode doctor starts from) records that a full walk of the chain (Verify) found it
// sound up to an event, so that a later check can start there: the event still
// having the recorded id pins every event before it, since each id covers the
// prev_hash of its event. It lives under meta key "verified" (doc.go), beside
// the chain and not in it: it is the operator's note, not history. It is not
// the transparency log's signed checkpoint (docs/transparency.md), which is a statement
// the node makes to observers; this one the node makes to itself.
//
// What a checkpoint does not pin is the stored bytes of the older events: a
// damaged block among them is found by the next full walk (Verify and
// CheckStore), not by VerifySince, which reads from the checkpoint on.

var metaVerifiedKey = []byte{spaceMeta, 'v', 'e', 'r', 'i', 'f', 'i', 'e', 'd'}

// VerifiedMark is the newest event of a chain that a full Verify found
// sound, and when.
type VerifiedMark struct {
	Seq        uint64
	ID         string
	VerifiedAt time.Time // UTC, to the microsecond
}

// storedVerifiedMark is the value under metaVerifiedKey; verified_at has the
// format of event timestamps.
type storedVerifiedMark struct {
	Seq        uint64 `json:"seq"`
	ID         string `json:"id"`
	VerifiedAt string `json:"verified_at"`
}

// RecordVerified durably records rep, the report of a successful Verify of
// this log, as its checkpoint, verified at at, replacing any earlier one. A
// report of VerifyFrom is refused: it did not read the events before its From,
// so it cannot vouch for them.
func (l *Log) RecordVerified(rep VerifyReport, at time.Time) (VerifiedMark, error) {
	switch {
	case rep.From != 1 || rep.Events == 0:
		return VerifiedMark{}, errors.New("record checkpoint: the report is not of a full verify")
	case rep.NodeDID != l.did:
		return VerifiedMark{}, fmt.Errorf("record checkpoint: the report is of node %s, this log is %s", rep.NodeDID, l.did)
	case len(rep.TipHash) != idHexLen || !isLowerHex(rep.TipHash):
		return VerifiedMark{}, errors.New("record checkpoint: the report's tip hash is not 64 lowercase hex digits")
	}
	micros := at.UnixMicro()
	cp := VerifiedMark{Seq: rep.Events, ID: rep.TipHash, VerifiedAt: time.UnixMicro(micros).UTC()}
	b, err := json.Marshal(storedVerifiedMark{Seq: cp.Seq, ID: cp.ID, VerifiedAt: formatMicros(micros)})
	if err != nil {
		return VerifiedMark{}, fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := l.Healthy(); err != nil {
		return VerifiedMark{}, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err := withFatal(func() error { return l.db.Set(metaVerifiedKey, b, pebble.Sync) }); err != nil {
		return VerifiedMark{}, fmt.Errorf("write checkpoint: %w", err)
	}
	return cp, nil
}

// Checkpoint returns the recorded checkpoint; false when no full verify was
// ever recorded.
func (l *Log) VerifiedMark() (VerifiedMark, bool, error) {
	v, closer, err := l.db.Get(metaVerifiedKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return VerifiedMark{}, false, nil
	}
	if err != nil {
		return VerifiedMark{}, false, fmt.Errorf("read checkpoint: %w", l.readFault(err))
	}
	var s storedVerifiedMark
	err = json.Unmarshal(v, &s)
	closer.Close()
	if err != nil {
		return VerifiedMark{}, false, fmt.Errorf("read checkpoint: %w", err)
	}
	micros, ok := parseTimestamp(s.VerifiedAt)
	if s.Seq == 0 || len(s.ID) != idHexLen || !isLowerHex(s.ID) || !ok {
		return VerifiedMark{}, false, errors.New("read checkpoint: malformed value")
	}
	return VerifiedMark{Seq: s.Seq, ID: s.ID, VerifiedAt: time.UnixMicro(micros).UTC()}, true, nil
}

// VerifySince checks the chain from checkpoint cp to the tip: the event at
// cp.Seq must still have the id a full verify recorded, and every event after
// it must verify and link as Verify requires, as must the genesis event. It
// returns a *ChainError naming the first bad seq. progress is VerifyFrom's.
func (l *Log) VerifySince(ctx context.Context, cp VerifiedMark, progress func(seq uint64)) (VerifyReport, error) {
	tip := l.Tip()
	when := formatMicros(cp.VerifiedAt.UnixMicro())
	if cp.Seq > tip.Seq {
		return VerifyReport{}, chainErr(ErrBrokenChain, tip.Seq+1,
			"event missing: the full verify of %s reached seq %d, the tip is seq %d", when, cp.Seq, tip.Seq)
	}
	ev, err := l.signedEvent(cp.Seq, tip.Seq)
	if err != nil {
		return VerifyReport{}, err
	}
	if ev.ID != cp.ID {
		return VerifyReport{}, chainErr(ErrBrokenChain, cp.Seq,
			"the event was replaced since the full verify of %s (id %.12s…, recorded %.12s…)", when, ev.ID, cp.ID)
	}
	return l.VerifyFrom(ctx, cp.Seq+1, progress)
}
