package statemap

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// Change is one entry set to a value hash, or removed. Loc is the caller's
// locator of the value, for a caller that keeps values itself: the tree
// stores it beside the entry, never hashes it, and hands it back (Lookup,
// ProveEntry, Outcome.Released).
type Change struct {
	KeyHash   Hash
	ValueHash Hash
	Delete    bool
	Loc       uint64
}

// Put is the change that sets key's record to value.
func Put(key string, value []byte) Change {
	return Change{KeyHash: HashKey(key), ValueHash: HashValue(value)}
}

// Remove is the change that removes key's record.
func Remove(key string) Change {
	return Change{KeyHash: HashKey(key), Delete: true}
}

// Update applies a batch of changes to the map that r reads, writing every
// changed record to w, and returns the new root and entry count. It reads
// only the root record and the node records on the changed keys' paths,
// never the whole map and never a range: whether a key is present, and its
// value hash, is what its path ends at. It never reads back a record it
// wrote, so r must show the state before the call and w's writes take
// effect when the caller commits them. Removing an absent key or setting a
// value a key already has changes nothing, and a batch of only such changes
// writes nothing; a batch that names one key twice is refused
// (ErrDuplicateChange) before anything is written. After an error the
// caller discards w's writes.
func Update(r Reader, w Writer, changes []Change) (root Hash, entries uint64, err error) {
	o, err := Apply(r, w, changes)
	return o.Root, o.Entries, err
}

// Outcome is what Apply made of a batch of changes.
type Outcome struct {
	Root    Hash
	Entries uint64
	// Released are the locators no entry holds after the batch: those of
	// the entries it removed or set to another value, and those of its own
	// changes that changed nothing (an entry keeps its locator when set to
	// the value it has, and a removal has none to keep).
	Released []Entry
}

// Apply is Update, and also returns the locators the batch released.
func Apply(r Reader, w Writer, changes []Change) (Outcome, error) {
	root, entries, top, err := readRoot(r)
	if err != nil {
		return Outcome{}, err
	}
	cs := slices.Clone(changes)
	slices.SortFunc(cs, func(a, b Change) int { return bytes.Compare(a.KeyHash[:], b.KeyHash[:]) })
	for i := 1; i < len(cs); i++ {
		if cs[i].KeyHash == cs[i-1].KeyHash {
			return Outcome{}, fmt.Errorf("%w: %s", ErrDuplicateChange, cs[i].KeyHash)
		}
	}
	u := updater{r: r, w: w, entries: entries}
	next, err := u.update(0, cs, top)
	if err != nil {
		return Outcome{}, err
	}
	if next == top {
		return Outcome{Root: root, Entries: entries, Released: u.released}, nil
	}
	root = next.hashAt(0)
	v := binary.BigEndian.AppendUint64(append(make([]byte, 0, 32+8+leafRefSize), root[:]...), u.entries)
	if err := w.Set(rootKey, appendRef(v, next)); err != nil {
		return Outcome{}, err
	}
	return Outcome{Root: root, Entries: u.entries, Released: u.released}, nil
}

// updater is one Update's store and its running entry count.
type updater struct {
	r        Reader
	w        Writer
	entries  uint64
	released []Entry
}

// update applies cs, sorted, distinct and sharing their first d bits, to
// the subtree at depth d on their side, which cur names, and returns the
// new subtree's ref: cur itself when no change changed anything, and then
// it has written nothing.
func (u *updater) update(d int, cs []Change, cur ref) (ref, error) {
	if len(cs) == 0 {
		return cur, nil
	}
	if cur.kind != kindNode {
		return u.rebuild(d, cs, cur)
	}
	// Where the changes leave the node's path above its branching depth,
	// a new node may branch there with the old subtree whole on one side.
	b := min(cur.depth, commonPrefix(cs[0].KeyHash, cur.key), commonPrefix(cs[len(cs)-1].KeyHash, cur.key))
	split := sort.Search(len(cs), func(i int) bool { return cs[i].KeyHash.Bit(b) == 1 })
	parts := [2][]Change{cs[:split], cs[split:]}
	var sides [2]ref
	var err error
	if b < cur.depth {
		own := cur.key.Bit(b)
		if sides[own], err = u.update(b+1, parts[own], cur); err != nil {
			return ref{}, err
		}
		if sides[1-own], err = u.update(b+1, parts[1-own], ref{}); err != nil {
			return ref{}, err
		}
		return join(u.w, b, sides)
	}
	kids, err := readNode(u.r, cur)
	if err != nil {
		return ref{}, err
	}
	for v, part := range parts {
		if sides[v], err = u.update(b+1, part, kids[v]); err != nil {
			return ref{}, err
		}
	}
	if sides == kids {
		return cur, nil
	}
	if sides[0].kind == kindEmpty || sides[1].kind == kindEmpty {
		if err := u.w.Delete(nodeKey(cur.key, b)); err != nil {
			return ref{}, err
		}
	}
	return join(u.w, b, sides)
}

// rebuild applies cs to the subtree at depth d that cur names, nothing or
// one entry, below which no node is stored, and builds the subtree anew.
func (u *updater) rebuild(d int, cs []Change, cur ref) (ref, error) {
	es := make([]Entry, 0, len(cs)+1)
	kept, changed := cur.kind == kindLeaf, false
	for _, c := range cs {
		present := cur.kind == kindLeaf && c.KeyHash == cur.key
		switch {
		case c.Delete && !present, !c.Delete && present && c.ValueHash == cur.hash:
			u.released = append(u.released, Entry{KeyHash: c.KeyHash, ValueHash: c.ValueHash, Loc: c.Loc})
			continue
		case c.Delete:
			u.entries--
		case !present:
			u.entries++
		}
		if present {
			kept = false
			u.released = append(u.released, Entry{KeyHash: cur.key, ValueHash: cur.hash, Loc: cur.loc})
		}
		changed = true
		if c.Delete {
			u.released = append(u.released, Entry{KeyHash: c.KeyHash, Loc: c.Loc})
		} else {
			es = append(es, Entry{c.KeyHash, c.ValueHash, c.Loc})
		}
	}
	if !changed {
		return cur, nil
	}
	if kept {
		i := sort.Search(len(es), func(i int) bool { return bytes.Compare(es[i].KeyHash[:], cur.key[:]) > 0 })
		es = slices.Insert(es, i, Entry{cur.key, cur.hash, cur.loc})
	}
	return build(u.w, d, es)
}

// build makes the subtree at depth d that holds es, sorted and sharing
// their first d bits, and writes a record for each of its branching nodes.
func build(w Writer, d int, es []Entry) (ref, error) {
	switch len(es) {
	case 0:
		return ref{}, nil
	case 1:
		return ref{kind: kindLeaf, key: es[0].KeyHash, hash: es[0].ValueHash, loc: es[0].Loc}, nil
	}
	b := commonPrefix(es[0].KeyHash, es[len(es)-1].KeyHash)
	split := sort.Search(len(es), func(i int) bool { return es[i].KeyHash.Bit(b) == 1 })
	var sides [2]ref
	var err error
	if sides[0], err = build(w, b+1, es[:split]); err != nil {
		return ref{}, err
	}
	if sides[1], err = build(w, b+1, es[split:]); err != nil {
		return ref{}, err
	}
	return join(w, b, sides)
}

// join makes the subtree that branches, if at all, at depth b from its two
// sides: a node, whose record it writes, when both hold entries, else the
// side that does. The node's ref names it by its left side's key, that of
// its first entry.
func join(w Writer, b int, sides [2]ref) (ref, error) {
	switch {
	case sides[0].kind == kindEmpty:
		return sides[1], nil
	case sides[1].kind == kindEmpty:
		return sides[0], nil
	}
	n := ref{kind: kindNode, depth: b, key: prefix(sides[0].key, b), hash: NodeHash(sides[0].hashAt(b+1), sides[1].hashAt(b+1))}
	return n, writeNode(w, n.key, b, sides)
}
