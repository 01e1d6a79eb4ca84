package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/statemap"
)

// The state map's changes. A folder with the state map on (Folder.State)
// records, for each event that changes entries of the map, before the
// models fold it, each entry's value as it stood before the event, under
// two derived keys:
//
//	'p' ‖ seq (8 bytes, big-endian) ‖ SHA-256(key)  →  flag ‖ uvarint len(key) ‖ key ‖ value
//	'q' ‖ SHA-256(key) ‖ seq                        →  (empty)
//
// (flag 1: the record existed and value is its JCS form; 0: it did not).
// The 'p' records, in seq order, name the entries each event changed; the
// 'q' index finds an entry's first change after a seq. An entry's value at
// seq E is therefore the value its first change after E recorded, or, when
// it has not changed since E, the value the models give now: nothing is
// copied, and a create, whose entry did not exist before, records no value
// at all. Because the records are written by the fold, in the event's own
// batch, they are a pure function of the chain like the models: the node,
// a mirror and a replay derive the same tree at every seq, however far
// their folds have run past it. The state tree (statetree.go) consumes
// them up to the seq it commits to and deletes them.
const (
	changePrefix = 'p'
	indexPrefix  = 'q'
)

// changeKey is the derived key of the change of the entry kh at seq.
func changeKey(seq uint64, kh statemap.Hash) []byte {
	k := make([]byte, 0, 1+8+len(kh))
	k = binary.BigEndian.AppendUint64(append(k, changePrefix), seq)
	return append(k, kh[:]...)
}

// changeIndexKey is the derived key that indexes the change of the entry kh at
// seq by the entry.
func changeIndexKey(kh statemap.Hash, seq uint64) []byte {
	k := make([]byte, 0, 1+len(kh)+8)
	k = append(append(k, indexPrefix), kh[:]...)
	return binary.BigEndian.AppendUint64(k, seq)
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

// foldStateChanges records the entries ev changes, with their values
// before it, read through the fold's own transaction before the models
// fold ev. An event whose payload does not decode changes no model, and so
// no entry; an event a model refuses leaves records that name an entry
// with the value it keeps, which a round finds unchanged.
func foldStateChanges(tx *eventlog.ModelTxn, ev *eventlog.Event) error {
	keys, err := AppendStateKeys(nil, ev)
	if err != nil || len(keys) == 0 {
		return nil
	}
	sv := StateView{r: tx}
	for _, k := range keys {
		value, ok, err := sv.Value(k)
		if err != nil {
			return fmt.Errorf("state map entry %q before seq %d: %w", k, ev.Seq, err)
		}
		kh := statemap.HashKey(k)
		tx.SetDerived(changeKey(ev.Seq, kh), encodeChange(k, value, ok))
		tx.SetDerived(changeIndexKey(kh, ev.Seq), []byte{})
	}
	return nil
}
