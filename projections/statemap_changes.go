package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/statemap"
)

// The state map's changes. A folder with the state map on (Folder.State)
// records, for each event that changes entries of the map, each entry's
// value after the event, under the derived key
//
//	'p' ‖ seq (8 bytes, big-endian) ‖ SHA-256(key)  →  flag ‖ uvarint len(key) ‖ key ‖ value
//
// (flag 1: the record exists and value is its JCS form; 0: it does not).
// Because they are written by the fold, in the event's own batch, they are
// a pure function of the chain like the records: the node, a mirror and a
// replay derive the same tree at every seq, however far their folds have
// run past it. The state tree (statetree.go) takes those past its commit in
// seq order up to the seq it commits to. Of each entry's changes it keeps
// the newest, which is where a proof reads the entry's value, and deletes
// the others: a value is written once, by the fold, and never copied.
const changePrefix = 'p'

// changeKey is the derived key of the change of the entry kh at seq.
func changeKey(seq uint64, kh statemap.Hash) []byte {
	k := make([]byte, 0, 1+8+len(kh))
	k = binary.BigEndian.AppendUint64(append(k, changePrefix), seq)
	return append(k, kh[:]...)
}

// changeBound is the first change key of seq: the range of the changes
// after seq a through seq b is [changeBound(a+1), changeBound(b+1)).
func changeBound(seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{changePrefix}, seq)
}

func encodeChange(key string, value []byte, ok bool) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+len(value))
	flag := byte(0)
	if ok {
		flag = 1
	}
	b = binary.AppendUvarint(append(b, flag), uint64(len(key)))
	return append(append(b, key...), value...)
}

// decodeChange is encodeChange's inverse; value aliases b.
func decodeChange(b []byte) (key string, value []byte, ok bool, err error) {
	if len(b) < 2 || b[0] > 1 {
		return "", nil, false, errChange
	}
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n > uint64(len(b)-1-w) {
		return "", nil, false, errChange
	}
	rest := b[1+w:]
	return string(rest[:n]), rest[n:], b[0] == 1, nil
}

// foldStateChanges records the entries ev changed, with their values after
// it, read through the fold's own transaction. An event whose payload does
// not decode changed no model, and so no entry.
func foldStateChanges(tx *eventlog.ModelTxn, ev *eventlog.Event) error {
	keys, err := AppendStateKeys(nil, ev)
	if err != nil || len(keys) == 0 {
		return nil
	}
	sv := StateView{r: tx}
	// The mission fold answers with the mission it wrote: its value is
	// rendered from that, not decoded again from the bytes just stored.
	folded, _ := tx.Answered().(*written)
	for _, k := range keys {
		var value []byte
		var ok bool
		var err error
		if kind, id, _ := SplitStateKey(k); folded != nil && kind == StateKindMission && id == folded.m.MissionID {
			value, err = sv.missionValue(tx, folded.m)
			ok = err == nil
		} else {
			value, ok, err = sv.Value(k)
		}
		if err != nil {
			return fmt.Errorf("state map entry %q at seq %d: %w", k, ev.Seq, err)
		}
		tx.SetDerived(changeKey(ev.Seq, statemap.HashKey(k)), encodeChange(k, value, ok))
	}
	return nil
}
