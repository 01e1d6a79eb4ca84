package eventlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// LastOfType returns the newest event of type typ at or below seq until, by
// one seek in the type index: what a node finds again at each start, such as
// its newest state.committed, without reading the chain.
func (l *Log) LastOfType(typ string, until uint64) (*Event, bool, error) {
	upper := typeKeyEnd(typ)
	if until < ^uint64(0) {
		upper = typeKey(typ, until+1)
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: typeKey(typ, 0), UpperBound: upper})
	if err != nil {
		return nil, false, fmt.Errorf("find the newest %s: %w", typ, l.readFault(err))
	}
	defer it.Close()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return nil, false, fmt.Errorf("find the newest %s: %w", typ, l.readFault(err))
		}
		return nil, false, nil
	}
	k := it.Key()
	ev, err := l.Event(u64(k[len(k)-8:]))
	if err != nil {
		return nil, false, err
	}
	return ev, true, nil
}
