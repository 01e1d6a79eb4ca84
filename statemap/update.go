package statemap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// Change is one entry set to a value hash, or removed.
type Change struct {
	KeyHash   Hash
	ValueHash Hash
	Delete    bool
}

// Put is the change that sets key's record to value.
func Put(key string, value []byte) Change {
	return Change{KeyHash: HashKey(key), ValueHash: HashValue(value)}
}

// Remove is the change that removes key's record.
func Remove(key string) Change {
	return Change{KeyHash: HashKey(key), Delete: true}
}

// result is a subtree's hash after an update, with how many entries it
// holds (0, 1, or 2 for two or more) and, when one, that entry: a parent
// whose other side is empty becomes that entry's leaf.
type result struct {
	n    int
	hash Hash
	only entry
}

// Update applies a batch of changes to the map that r reads, writing every
// changed record to w, and returns the new root and entry count. It reads
// and writes only the entries and nodes on the changed keys' paths (and the
// nodes beside them), never the whole map; it never reads back a record it
// wrote, so r must show the state before the call and w's writes take
// effect when the caller commits them. Removing an absent key or setting a
// value a key already has changes nothing; a batch that names one key twice
// is refused (ErrDuplicateChange) before anything is written. After an
// error the caller discards w's writes.
func Update(r Reader, w Writer, changes []Change) (root Hash, entries uint64, err error) {
	root, entries, err = Root(r)
	if err != nil {
		return Hash{}, 0, err
	}
	cs := slices.Clone(changes)
	slices.SortFunc(cs, func(a, b Change) int { return bytes.Compare(a.KeyHash[:], b.KeyHash[:]) })
	for i := 1; i < len(cs); i++ {
		if cs[i].KeyHash == cs[i-1].KeyHash {
			return Hash{}, 0, fmt.Errorf("%w: %s", ErrDuplicateChange, cs[i].KeyHash)
		}
	}
	// Drop what changes nothing, so that an idle batch writes nothing and
	// the count stays exact.
	kept := cs[:0]
	for _, c := range cs {
		old, ok, err := Lookup(r, c.KeyHash)
		if err != nil {
			return Hash{}, 0, err
		}
		switch {
		case c.Delete && !ok, !c.Delete && ok && old == c.ValueHash:
			continue
		case c.Delete:
			entries--
		case !ok:
			entries++
		}
		kept = append(kept, c)
	}
	if len(kept) == 0 {
		return root, entries, nil
	}
	s, err := readSpan(r, kept[0].KeyHash, 0)
	if err != nil {
		return Hash{}, 0, err
	}
	res, err := update(r, w, 0, kept, s)
	if err != nil {
		return Hash{}, 0, err
	}
	v := make([]byte, len(root)+8)
	copy(v, res.hash[:])
	binary.BigEndian.PutUint64(v[len(root):], entries)
	if err := w.Set(rootKey, v); err != nil {
		return Hash{}, 0, err
	}
	return res.hash, entries, nil
}

// update applies cs, sorted, distinct and sharing their first d bits, to
// the subtree at depth d on their side, which holds s.
func update(r Reader, w Writer, d int, cs []Change, s span) (result, error) {
	if s.n < 2 {
		// No node is stored below a subtree of one entry: build it anew.
		return rebuild(w, d, s, cs)
	}
	path := cs[0].KeyHash
	wasBranch := commonPrefix(s.first.key, s.last.key) == d
	spans, err := s.split(r, d)
	if err != nil {
		return result{}, err
	}
	split := sort.Search(len(cs), func(i int) bool { return cs[i].KeyHash.Bit(d) == 1 })
	parts := [2][]Change{cs[:split], cs[split:]}
	var sides [2]result
	for v, part := range parts {
		if len(part) > 0 {
			if sides[v], err = update(r, w, d+1, part, spans[v]); err != nil {
				return result{}, err
			}
			continue
		}
		sides[v] = result{n: spans[v].n, only: spans[v].first}
		if sides[v].hash, err = spans[v].hash(r, d+1); err != nil {
			return result{}, err
		}
	}
	return join(w, d, path, sides, wasBranch)
}

// rebuild applies cs to the subtree at depth d that holds s, nothing or one
// entry, and writes its entries and nodes.
func rebuild(w Writer, d int, s span, cs []Change) (result, error) {
	es := make([]entry, 0, len(cs)+1)
	kept := s.n == 1
	for _, c := range cs {
		if kept && c.KeyHash == s.first.key {
			kept = false
		}
		if c.Delete {
			if err := w.Delete(entryKey(c.KeyHash)); err != nil {
				return result{}, err
			}
			continue
		}
		if err := w.Set(entryKey(c.KeyHash), c.ValueHash[:]); err != nil {
			return result{}, err
		}
		es = append(es, entry{c.KeyHash, c.ValueHash})
	}
	if kept {
		i := sort.Search(len(es), func(i int) bool { return bytes.Compare(es[i].key[:], s.first.key[:]) > 0 })
		es = slices.Insert(es, i, s.first)
	}
	return build(w, d, es)
}

// build hashes the subtree at depth d that holds es, sorted and sharing
// their first d bits, and writes the hash of each of its branching nodes.
func build(w Writer, d int, es []entry) (result, error) {
	switch len(es) {
	case 0:
		return result{}, nil
	case 1:
		return result{n: 1, hash: LeafHash(es[0].key, es[0].value), only: es[0]}, nil
	}
	split := sort.Search(len(es), func(i int) bool { return es[i].key.Bit(d) == 1 })
	var sides [2]result
	var err error
	if sides[0], err = build(w, d+1, es[:split]); err != nil {
		return result{}, err
	}
	if sides[1], err = build(w, d+1, es[split:]); err != nil {
		return result{}, err
	}
	return join(w, d, es[0].key, sides, false)
}

// join makes the subtree at depth d from its two sides and keeps its node
// record in step: stored while it branches, removed when it stops.
func join(w Writer, d int, path Hash, sides [2]result, wasBranch bool) (result, error) {
	var res result
	switch {
	case sides[0].n == 0:
		res = sides[1]
		if res.n == 2 {
			res.hash = NodeHash(Hash{}, res.hash)
		}
	case sides[1].n == 0:
		res = sides[0]
		if res.n == 2 {
			res.hash = NodeHash(res.hash, Hash{})
		}
	default:
		res = result{n: 2, hash: NodeHash(sides[0].hash, sides[1].hash)}
		return res, w.Set(nodeKey(path, d), res.hash[:])
	}
	if wasBranch {
		return res, w.Delete(nodeKey(path, d))
	}
	return res, nil
}
