package eventlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/cockroachdb/pebble/v2"
)

// treeBuildBatch is how many events' stored hashes one batch of a tree build
// writes: large enough that the build is bound by reading the events, small
// enough that a batch stays a few megabytes.
const treeBuildBatch = 16384

// openTree brings the Merkle tree up to the chain's tip and returns its
// frontier. A data directory written before the tree existed has none: its
// tree is built here once, from the events, in batches that each record the
// size they reach, so a build cut short resumes where it stopped.
func (l *Log) openTree(progress RebuildProgress) (*treeFrontier, error) {
	tip := int64(l.tip.Seq)
	size, err := l.storedTreeSize()
	if err != nil {
		return nil, err
	}
	if size > tip {
		return nil, fmt.Errorf("%w: the merkle tree covers %d events, the chain has %d", ErrCorrupt, size, tip)
	}
	if size < tip {
		if err := l.buildTree(size, tip, progress); err != nil {
			return nil, fmt.Errorf("build the merkle tree: %w", err)
		}
	}
	return l.loadFrontier(tip)
}

// storedTreeSize reads how many events the stored hashes cover; 0 when the
// directory has no tree yet.
func (l *Log) storedTreeSize() (int64, error) {
	v, closer, err := l.db.Get(metaTreeSizeKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the merkle tree's size: %w", l.readFault(err))
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: the merkle tree's size has %d bytes", ErrCorrupt, len(v))
	}
	return int64(u64(v)), nil
}

// buildTree adds the leaves of events from+1 … to.
func (l *Log) buildTree(from, to int64, progress RebuildProgress) error {
	l.log.Info("building the merkle tree over the chain", logkey.FromSeq, from+1, logkey.TipSeq, to)
	f, err := l.loadFrontier(from)
	if err != nil {
		return err
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(uint64(from + 1)), UpperBound: eventKey(uint64(to) + 1)})
	if err != nil {
		return fmt.Errorf("read events: %w", l.readFault(err))
	}
	defer it.Close()
	b := l.db.NewBatch()
	defer func() { b.Close() }()
	seq := from
	var chunk []*pending // the events of the next chunk (tree.go)
	for valid := it.First(); valid; valid = it.Next() {
		seq++
		if got := int64(u64(it.Key()[1:])); got != seq {
			return chainErr(ErrCorrupt, uint64(seq), "event is missing (found seq %d next)", got)
		}
		id, ok := storedID(it.Value())
		if !ok {
			return chainErr(ErrCorrupt, uint64(seq), "stored event is malformed")
		}
		first, hashes, err := f.add(id)
		if err != nil {
			return err
		}
		chunk = append(chunk, &pending{treeFirst: first, tree: hashes})
		if len(chunk) == treeChunkRecords || seq == to || seq%treeBuildBatch == 0 {
			writeTree(b, chunk)
			chunk = chunk[:0]
		}
		if seq%treeBuildBatch == 0 || seq == to {
			b.Set(metaTreeSizeKey, appendU64(nil, uint64(seq)), nil)
			opt := pebble.NoSync
			if seq == to {
				opt = pebble.Sync
			}
			if err := b.Commit(opt); err != nil {
				return fmt.Errorf("write stored tree hashes up to seq %d: %w", seq, storeFault(err))
			}
			b.Close()
			b = l.db.NewBatch()
			if progress != nil {
				progress(uint64(seq), uint64(to))
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read events: %w", l.readFault(err))
	}
	if seq != to {
		return chainErr(ErrCorrupt, uint64(seq+1), "event is missing")
	}
	l.log.Info("built the merkle tree", logkey.TreeSize, to)
	return nil
}

// storedID reads the id of a stored event from its fixed-size suffix.
func storedID(stored []byte) ([32]byte, bool) {
	var id [32]byte
	at := len(stored) - storedSuffixLen + len(`,"id":"`)
	if len(stored) < storedSuffixLen+2 || !bytes.HasPrefix(stored[len(stored)-storedSuffixLen:], []byte(`,"id":"`)) {
		return id, false
	}
	if _, err := hex.Decode(id[:], stored[at:at+64]); err != nil {
		return id, false
	}
	return id, true
}
