package statemap

import (
	"bytes"
	"iter"
	"slices"
	"sort"
)

// MemStore is an ordered key-value store in memory, a Reader and a Writer,
// for tests, offline checks and mirrors that rebuild a map from a chain.
// Its records sit in sorted runs of at most 2×memRun, so a write moves at
// most a run's worth of records rather than the whole store. The zero value
// is an empty store; it is not safe for concurrent use.
type MemStore struct {
	runs  [][]memRecord
	n     int
	bytes int
}

// memRun is half the longest run: long enough that the index of runs stays
// small, short enough that an insert's copy does.
const memRun = 256

// memRecord keeps a key and its value in one slice, one allocation, which
// reads return without copying: a Reader's slices need last only until its
// next call, and a record's bytes are never changed in place.
type memRecord struct {
	data   []byte
	keyLen int
}

func (m memRecord) key() []byte   { return m.data[:m.keyLen:m.keyLen] }
func (m memRecord) value() []byte { return m.data[m.keyLen:len(m.data):len(m.data)] }

var (
	_ Reader = (*MemStore)(nil)
	_ Writer = (*MemStore)(nil)
)

// Len is the number of records held.
func (s *MemStore) Len() int { return s.n }

// Bytes is the sum of the lengths of every key and value held: what the
// map's layout costs before a store's own overhead and compression.
func (s *MemStore) Bytes() int { return s.bytes }

// All yields every record in key order, as slices of the store's own that
// the caller does not modify.
func (s *MemStore) All() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for _, run := range s.runs {
			for _, r := range run {
				if !yield(r.key(), r.value()) {
					return
				}
			}
		}
	}
}

// find returns the run that holds key or would hold it (len(runs) past the
// end), and key's position in it.
func (s *MemStore) find(key []byte) (run, i int) {
	run = sort.Search(len(s.runs), func(j int) bool {
		r := s.runs[j]
		return bytes.Compare(r[len(r)-1].key(), key) >= 0
	})
	if run == len(s.runs) {
		return run, 0
	}
	r := s.runs[run]
	i = sort.Search(len(r), func(j int) bool { return bytes.Compare(r[j].key(), key) >= 0 })
	return run, i
}

// Get implements Reader.
func (s *MemStore) Get(key []byte) ([]byte, bool, error) {
	run, i := s.find(key)
	if run == len(s.runs) || !bytes.Equal(s.runs[run][i].key(), key) {
		return nil, false, nil
	}
	return s.runs[run][i].value(), true, nil
}

// First implements Reader.
func (s *MemStore) First(lo, hi []byte) ([]byte, []byte, bool, error) {
	run, i := s.find(lo)
	if run == len(s.runs) {
		return nil, nil, false, nil
	}
	r := s.runs[run][i]
	if bytes.Compare(r.key(), hi) >= 0 {
		return nil, nil, false, nil
	}
	return r.key(), r.value(), true, nil
}

// Last implements Reader.
func (s *MemStore) Last(lo, hi []byte) ([]byte, []byte, bool, error) {
	run, i := s.find(hi)
	// The record before position i of run is the last below hi.
	if i == 0 {
		if run == 0 {
			return nil, nil, false, nil
		}
		run--
		i = len(s.runs[run])
	}
	r := s.runs[run][i-1]
	if bytes.Compare(r.key(), lo) < 0 {
		return nil, nil, false, nil
	}
	return r.key(), r.value(), true, nil
}

// Set implements Writer.
func (s *MemStore) Set(key, value []byte) error {
	rec := memRecord{data: slices.Concat(key, value), keyLen: len(key)}
	run, i := s.find(key)
	if run == len(s.runs) {
		// Past every run's last key: the end of the last run.
		if run == 0 {
			s.runs = append(s.runs, nil)
		} else {
			run--
		}
		i = len(s.runs[run])
	} else if bytes.Equal(s.runs[run][i].key(), key) {
		old := s.runs[run][i]
		s.bytes += len(rec.data) - len(old.data)
		s.runs[run][i] = rec
		return nil
	}
	s.runs[run] = slices.Insert(s.runs[run], i, rec)
	s.n++
	s.bytes += len(rec.data)
	if r := s.runs[run]; len(r) > 2*memRun {
		tail := slices.Clone(r[memRun:])
		s.runs[run] = slices.Clip(r[:memRun])
		s.runs = slices.Insert(s.runs, run+1, tail)
	}
	return nil
}

// Delete implements Writer.
func (s *MemStore) Delete(key []byte) error {
	run, i := s.find(key)
	if run == len(s.runs) || !bytes.Equal(s.runs[run][i].key(), key) {
		return nil
	}
	s.n--
	s.bytes -= len(s.runs[run][i].data)
	s.runs[run] = slices.Delete(s.runs[run], i, i+1)
	if len(s.runs[run]) == 0 {
		s.runs = slices.Delete(s.runs, run, run+1)
	}
	return nil
}
