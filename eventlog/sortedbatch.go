package eventlog

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// batchWriter is what the append path writes a group's keys through: a
// *pebble.Batch, or a sortedBatch in front of one.
type batchWriter interface {
	Set(key, value []byte, _ *pebble.WriteOptions) error
	Delete(key []byte, _ *pebble.WriteOptions) error
}

// sortedBatch gathers a group's writes and hands them to a Pebble batch in key
// order. Pebble inserts a batch into its memtable, a skiplist, one key after
// the other, and its inserter starts each search from where the last one
// ended: keys that arrive in order (a group's event keys, its index entries
// of one kind) are each found next to the one before instead of by a search
// from the top of a skiplist of hundreds of thousands of keys, each step of
// which is a cache miss.
//
// Of several writes of one key in a group (a counter each create moves, the
// highest mission id) only the last reaches the batch: a batch becomes
// visible at once, so no reader could ever see the earlier ones, and each
// would otherwise be one more entry to insert, write to the WAL, flush and
// compact away.
type sortedBatch struct {
	ops []batchOp
}

type batchOp struct {
	key, value []byte
	deleted    bool
	order      int // the write's place among the group's
}

func (s *sortedBatch) Set(key, value []byte, _ *pebble.WriteOptions) error {
	s.ops = append(s.ops, batchOp{key: key, value: value, order: len(s.ops)})
	return nil
}

func (s *sortedBatch) Delete(key []byte, _ *pebble.WriteOptions) error {
	s.ops = append(s.ops, batchOp{key: key, deleted: true, order: len(s.ops)})
	return nil
}

// writeTo adds the writes to b in key order, the last write of each key only,
// and empties s for the next group.
func (s *sortedBatch) writeTo(b *pebble.Batch) {
	slices.SortFunc(s.ops, func(x, y batchOp) int {
		if c := bytes.Compare(x.key, y.key); c != 0 {
			return c
		}
		return cmp.Compare(x.order, y.order)
	})
	for i, op := range s.ops {
		if i+1 < len(s.ops) && bytes.Equal(op.key, s.ops[i+1].key) {
			continue // a later write of the key follows
		}
		if op.deleted {
			b.Delete(op.key, nil)
		} else {
			b.Set(op.key, op.value, nil)
		}
	}
	clear(s.ops)
	s.ops = s.ops[:0]
}
