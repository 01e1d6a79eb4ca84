package eventlog

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle tree over the chain (docs/transparency.md): leaf i is the event with seq
// i+1, its data the 32 bytes of the event's id, hashed as RFC 9162 says. The
// tree is kept as tlog's stored hashes: record n adds the hashes at
// tlog.StoredHashIndex(0, n) onwards, one per subtree it completes, so the
// stored hashes of consecutive events are consecutive. They are written in
// the batch of the events they cover, with the tree's size under
// metaTreeSizeKey, so after any crash the tree and the chain agree.
//
// They are stored in chunks: one key holds the stored hashes of up to
// treeChunkRecords consecutive events of one batch, under the stored index of
// its first hash. A group commit thus adds one or a few keys for the tree, not
// two per event: the store's cost is per key, and the tree must cost appends
// little (docs/benchmarks.md: at most 5%). A stored hash is read by seeking to the
// chunk at or before its index.

// spaceTree holds the chunks: 0x09 <stored index of the chunk's first hash
// u64> → the chunk's hashes, 32 bytes each, in stored-index order.
const spaceTree byte = 0x09

// treeChunkRecords bounds the events one chunk covers (about 2 hashes each),
// so that reading one stored hash never loads more than a few kilobytes.
const treeChunkRecords = 128

// metaTreeSizeKey holds the number of events the stored hashes cover (u64).
// It equals the tip's seq, except in a data directory from before the tree,
// whose tree Open builds (treebuild.go).
var metaTreeSizeKey = []byte{spaceMeta, 't', 'r', 'e', 'e'}

func treeKey(index int64) []byte { return appendU64([]byte{spaceTree}, uint64(index)) }

// treeFrontier is what the next append reads of the tree: the root of each
// complete subtree that is still a left child waiting for its sibling, at most
// one per level. The sequencer owns it, so appending never reads the store.
type treeFrontier struct {
	size   int64
	hashes map[int64]tlog.Hash // stored index → hash
}

// ReadHashes serves tlog.StoredHashes from the frontier. Anything else would
// be a flaw in the frontier's upkeep, not a state of the store.
func (f *treeFrontier) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		h, ok := f.hashes[x]
		if !ok {
			return nil, fmt.Errorf("tree: stored hash %d is not on the frontier of size %d", x, f.size)
		}
		out[i] = h
	}
	return out, nil
}

// add appends the leaf of an event id and returns the stored hashes it adds,
// which belong at first, first+1, … .
func (f *treeFrontier) add(id [32]byte) (first int64, hashes []tlog.Hash, err error) {
	n := f.size
	hashes, err = tlog.StoredHashes(n, id[:], f)
	if err != nil {
		return 0, nil, err
	}
	first = tlog.StoredHashIndex(0, n)
	// The left siblings just read are complete inner nodes now; the new
	// hashes that are left children wait for their siblings.
	for level := 0; level < len(hashes)-1; level++ {
		delete(f.hashes, tlog.StoredHashIndex(level, n>>level-1))
	}
	for level, h := range hashes {
		if (n>>level)&1 == 0 {
			f.hashes[first+int64(level)] = h
		}
	}
	f.size++
	return first, hashes, nil
}

// frontierIndexes lists the stored indexes of the frontier of a tree of size
// leaves: for each level whose bit is set in size, the last complete node of
// that level, a left child.
func frontierIndexes(size int64) []int64 {
	var out []int64
	for level := 0; size>>level > 0; level++ {
		if (size>>level)&1 == 1 {
			out = append(out, tlog.StoredHashIndex(level, size>>level-1))
		}
	}
	return out
}

// loadFrontier reads the frontier of a tree of size leaves from the store.
func (l *Log) loadFrontier(size int64) (*treeFrontier, error) {
	f := &treeFrontier{size: size, hashes: map[int64]tlog.Hash{}}
	idx := frontierIndexes(size)
	hs, err := l.treeReader().ReadHashes(idx)
	if err != nil {
		return nil, err
	}
	for i, x := range idx {
		f.hashes[x] = hs[i]
	}
	return f, nil
}

// writeTree stores the hashes that evs, consecutive events, add to the tree,
// in chunks of at most treeChunkRecords events.
func writeTree(b batchWriter, evs []*pending) {
	for len(evs) > 0 && evs[0].tree != nil {
		chunk := evs[:min(len(evs), treeChunkRecords)]
		evs = evs[len(chunk):]
		n := 0
		for _, p := range chunk {
			n += len(p.tree)
		}
		val := make([]byte, 0, n*tlog.HashSize)
		for _, p := range chunk {
			for i := range p.tree {
				val = append(val, p.tree[i][:]...)
			}
		}
		b.Set(treeKey(chunk[0].treeFirst), val, nil)
	}
}

// storeHashReader reads stored hashes from Pebble. Stored hashes never change
// once written, so it needs no snapshot: a reader asks only for hashes of a
// tree size the log has made durable.
type storeHashReader struct{ l *Log }

func (l *Log) treeReader() tlog.HashReader { return storeHashReader{l} }

func (r storeHashReader) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	if len(indexes) == 0 {
		return out, nil
	}
	it, err := r.l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceTree}, UpperBound: []byte{spaceTree + 1}})
	if err != nil {
		return nil, fmt.Errorf("read the merkle tree: %w", r.l.readFault(err))
	}
	defer it.Close()
	for i, x := range indexes {
		if !it.SeekLT(treeKey(x + 1)) {
			if err := it.Error(); err != nil {
				return nil, fmt.Errorf("read stored tree hash %d: %w", x, r.l.readFault(err))
			}
			return nil, fmt.Errorf("%w: stored tree hash %d is missing", ErrCorrupt, x)
		}
		at := (x - int64(u64(it.Key()[1:]))) * tlog.HashSize
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("read stored tree hash %d: %w", x, r.l.readFault(err))
		}
		if len(v)%tlog.HashSize != 0 || at+tlog.HashSize > int64(len(v)) {
			return nil, fmt.Errorf("%w: stored tree hash %d is missing", ErrCorrupt, x)
		}
		copy(out[i][:], v[at:])
	}
	return out, nil
}

// root is the root of the frontier's tree: its complete subtrees, largest on
// the left, folded from the right (RFC 9162 §2.1.1). Verifiers that see the
// events one by one get the root in constant memory.
func (f *treeFrontier) root() (tlog.Hash, bool) {
	var acc tlog.Hash
	have := false
	for level := 0; f.size>>level > 0; level++ {
		if (f.size>>level)&1 == 0 {
			continue
		}
		h := f.hashes[tlog.StoredHashIndex(level, f.size>>level-1)]
		if have {
			acc = tlog.NodeHash(h, acc)
		} else {
			acc, have = h, true
		}
	}
	return acc, have
}

// newTreeFrontier is the frontier of an empty tree.
func newTreeFrontier() *treeFrontier { return &treeFrontier{hashes: map[int64]tlog.Hash{}} }

// checkTreeRoot holds the stored tree to the root grown from the chain's
// ids by a verify walk: a stored hash that was changed or lost makes every
// proof and checkpoint that reads it wrong, so a full verify says so.
func (l *Log) checkTreeRoot(grown *treeFrontier) error {
	want, ok := grown.root()
	if !ok {
		return nil
	}
	// From the store, not the cached head: this is the check of what is stored.
	got, err := tlog.TreeHash(grown.size, l.treeReader())
	if err != nil {
		return fmt.Errorf("%w: read the merkle tree: %w", ErrCorrupt, err)
	}
	if got != want {
		return fmt.Errorf("%w: the stored merkle tree's root at size %d is not the root of the chain's ids", ErrCorrupt, grown.size)
	}
	return nil
}
