package projections

import (
	"encoding/binary"
	"fmt"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/statemap"
)

// The state map's changes. A folder with the state map on (Folder.State)
// records, for each event that changes entries of the map, each entry's
// value after the event, under the derived key
//
//	'p' ‖ seq (8 bytes, big-endian) ‖ SHA-256(key)  →  kind ‖ … ‖ uvarint len(key) ‖ key ‖ …
//
// where kind 0 (the entry does not exist) is followed by the key alone,
// kind 1 by the key and the value (the record's JCS form), and kind 2, a
// mission the event at seq created, by SHA-256(value) and then the key: that
// value is a function of the event alone (createdMission), which the chain
// holds, so the record need not repeat a mission's JSON for every create.
// Because they are written by the fold, in the event's own batch, they are
// a pure function of the chain like the records: the node, a mirror and a
// replay derive the same tree at every seq, however far their folds have
// run past it. The state tree (statetree.go) takes those past its commit in
// seq order up to the seq it commits to. Of each entry's changes it keeps
// the newest, which is where a proof reads the entry's value, and deletes
// the others.
const changePrefix = 'p'

// The kinds of change record.
const (
	changeAbsent  = 0
	changeValue   = 1
	changeCreated = 2
)

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
	if !ok {
		return append(binary.AppendUvarint(append(b, changeAbsent), uint64(len(key))), key...)
	}
	b = binary.AppendUvarint(append(b, changeValue), uint64(len(key)))
	return append(append(b, key...), value...)
}

// encodeCreated is the record of the mission key the event at the
// record's seq created, whose value hashes to h.
func encodeCreated(key string, h statemap.Hash) []byte {
	b := make([]byte, 0, 1+len(h)+binary.MaxVarintLen64+len(key))
	b = append(append(b, changeCreated), h[:]...)
	return append(binary.AppendUvarint(b, uint64(len(key))), key...)
}

// change is a decoded change record; value aliases the record.
type change struct {
	kind  byte
	key   string
	value []byte        // kind changeValue
	hash  statemap.Hash // kind changeCreated
}

// valueHash is the hash of the entry's value after the change.
func (c change) valueHash() statemap.Hash {
	if c.kind == changeCreated {
		return c.hash
	}
	return statemap.HashValue(c.value)
}

// decodeChange is the inverse of encodeChange and encodeCreated.
func decodeChange(b []byte) (change, error) {
	var c change
	if len(b) < 2 || b[0] > changeCreated {
		return c, errChange
	}
	c.kind, b = b[0], b[1:]
	if c.kind == changeCreated {
		if len(b) < len(c.hash) {
			return c, errChange
		}
		c.hash, b = statemap.Hash(b[:len(c.hash)]), b[len(c.hash):]
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return c, errChange
	}
	c.key, b = string(b[w:w+int(n)]), b[w+int(n):]
	switch {
	case c.kind == changeValue:
		c.value = b
	case len(b) != 0:
		return c, errChange
	}
	return c, nil
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
		var ok, created bool
		var err error
		if kind, id, _ := SplitStateKey(k); folded != nil && kind == StateKindMission && id == folded.m.MissionID {
			value, err = sv.missionValue(tx, folded.m)
			ok, created = true, ev.Type == events.TypeMissionCreated
		} else {
			value, ok, err = sv.Value(k)
		}
		if err != nil {
			return fmt.Errorf("state map entry %q at seq %d: %w", k, ev.Seq, err)
		}
		var rec []byte
		if created {
			rec = encodeCreated(k, statemap.HashValue(value))
		} else {
			rec = encodeChange(k, value, ok)
		}
		tx.SetDerived(changeKey(ev.Seq, statemap.HashKey(k)), rec)
	}
	return nil
}
