package eventlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ModelIter is one iterator over a range of a ModelView, for a reader that
// seeks many times in one view (the state tree's walks): a seek on it costs
// far less than a Scan or a Get, each of which opens an iterator of its
// own. Keys are without the space's byte, as Scan gives them. Close it
// before the view.
type ModelIter struct {
	it     *pebble.Iterator
	prefix byte
	seek   []byte
}

// Iter opens an iterator over [lower, upper) of the view.
func (v *ModelView) Iter(lower, upper []byte) (*ModelIter, error) {
	p := v.shared.prefix
	it, err := v.shared.snap.NewIter(&pebble.IterOptions{
		LowerBound: append([]byte{p}, lower...), UpperBound: append([]byte{p}, upper...)})
	if err != nil {
		return nil, fmt.Errorf("iterate read model: %w", storeFault(err))
	}
	return &ModelIter{it: it, prefix: p}, nil
}

func (m *ModelIter) key(k []byte) []byte {
	m.seek = append(append(m.seek[:0], m.prefix), k...)
	return m.seek
}

// SeekGE moves to the first key at or after k, and reports whether there
// is one in the range.
func (m *ModelIter) SeekGE(k []byte) bool { return m.it.SeekGE(m.key(k)) }

// SeekLT moves to the last key before k, and reports whether there is one
// in the range.
func (m *ModelIter) SeekLT(k []byte) bool { return m.it.SeekLT(m.key(k)) }

// Key and Value are those of the iterator's position, valid until it moves.
func (m *ModelIter) Key() []byte   { return m.it.Key()[1:] }
func (m *ModelIter) Value() []byte { return m.it.Value() }

// Err is the error that ended a seek, if any.
func (m *ModelIter) Err() error {
	if err := m.it.Error(); err != nil {
		return fmt.Errorf("iterate read model: %w", storeFault(err))
	}
	return nil
}

// Close releases the iterator.
func (m *ModelIter) Close() error { return m.it.Close() }
