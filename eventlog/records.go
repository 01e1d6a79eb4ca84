package eventlog

import (
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Records are small administrative values kept beside the chain but outside it,
// such as the hashed API tokens: state that must be durable yet is not history.
// Key: 0x06 <kind> 0x00 <id>. Writes are synced.

func recordKey(kind, id string) []byte {
	k := make([]byte, 0, 2+len(kind)+len(id))
	k = append(append(append(k, spaceRecord), kind...), 0)
	return append(k, id...)
}

// PutRecord durably stores value under kind and id, replacing any earlier value.
func (l *Log) PutRecord(kind, id string, value []byte) error {
	if err := l.Healthy(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err := withFatal(func() error { return l.db.Set(recordKey(kind, id), value, pebble.Sync) }); err != nil {
		return fmt.Errorf("write %s record: %w", kind, err)
	}
	return nil
}

// Records returns every record of kind in id order.
func (l *Log) Records(kind string) ([][]byte, error) {
	lower := recordKey(kind, "")
	upper := slices.Clone(lower)
	upper[len(upper)-1] = 1
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("read %s records: %w", kind, l.readFault(err))
	}
	defer it.Close()
	var out [][]byte
	for valid := it.First(); valid; valid = it.Next() {
		out = append(out, slices.Clone(it.Value()))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("read %s records: %w", kind, l.readFault(err))
	}
	return out, nil
}
