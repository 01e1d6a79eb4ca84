package projections

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/statemap"
)

// The state tree lives beside the read models, in the log's derived space
// (eventlog.DerivedWrites), under keys of its own next to the pending
// changes ('p', statemap_pending.go):
//
//	't' ‖ record key            → the tree's records (statemap's layout)
//	'v' ‖ SHA-256(key)          → uvarint len(key) ‖ key ‖ value: each entry's value
//	                              at the committed seq, which a proof hands out
//	'm'                         → the commit: through seq ‖ commitment seq ‖
//	                              root ‖ entries (8, 8, 32, 8 bytes)
//
// A round reads the tree and the pending changes through one view, and
// writes the tree's changed records, the entries' values, the commit and the
// deletion of the changes it consumed in one batch: a crash leaves the tree
// at one commit or the next, never between.
const (
	treePrefix   = 't'
	valuePrefix  = 'v'
	commitPrefix = 'm'
)

// StateCommit is the state tree as one round left it.
type StateCommit struct {
	// ThroughSeq is the last event whose changes the tree holds.
	ThroughSeq uint64
	// Root and Entries are the tree's root and its number of entries.
	Root    statemap.Hash
	Entries uint64
	// CommitmentSeq is the seq of the state.committed event that signs this
	// root, 0 when none does yet.
	CommitmentSeq uint64
}

const commitSize = 8 + 8 + 32 + 8

func (c StateCommit) encode() []byte {
	b := make([]byte, 0, commitSize)
	b = binary.BigEndian.AppendUint64(b, c.ThroughSeq)
	b = binary.BigEndian.AppendUint64(b, c.CommitmentSeq)
	b = append(b, c.Root[:]...)
	return binary.BigEndian.AppendUint64(b, c.Entries)
}

func decodeCommit(b []byte) (StateCommit, error) {
	if len(b) != commitSize {
		return StateCommit{}, storeErr(fmt.Errorf("state tree commit of %d bytes", len(b)))
	}
	c := StateCommit{ThroughSeq: binary.BigEndian.Uint64(b), CommitmentSeq: binary.BigEndian.Uint64(b[8:])}
	copy(c.Root[:], b[16:48])
	c.Entries = binary.BigEndian.Uint64(b[48:])
	return c, nil
}

// StateTreeCommit reads the tree's commit in v, a view of the models: the
// zero commit (the empty map through seq 0) before any round.
func StateTreeCommit(v *eventlog.ModelView) (StateCommit, error) {
	b, ok, err := v.Get(eventlog.DerivedKey([]byte{commitPrefix}))
	if err != nil {
		return StateCommit{}, storeErr(err)
	}
	if !ok {
		return StateCommit{}, nil
	}
	return decodeCommit(b)
}

// StateRound is the tree through one seq, computed from the last commit and
// the pending changes and not yet written. Commit writes it; Close drops it.
type StateRound struct {
	StateCommit
	// Changes is the number of entries the round changed (set or deleted).
	Changes int
	w       *eventlog.DerivedWrites
	// cw notes the round's tree writes for the log's cache, which moves
	// from root to the round's once they are committed.
	cw   *statemap.CacheWriter
	from statemap.Hash
}

// PrepareState computes the state tree of log through seq through, which
// must be durable (a ModelView's applied seq, or any seq a rebuild has
// folded): it reads the last commit and the pending changes up to through in
// one view, and stages the new tree. It fails with ErrStateBehind when the
// tree is already past through. A round that changes nothing is still a
// round: its root is the last one, through a later seq.
func PrepareState(log *eventlog.Log, through uint64) (*StateRound, error) {
	v, err := log.DerivedView()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	last, err := StateTreeCommit(v)
	if err != nil {
		return nil, err
	}
	if through < last.ThroughSeq {
		return nil, fmt.Errorf("%w: at %d, asked for %d", ErrStateBehind, last.ThroughSeq, through)
	}
	type entry struct {
		key   string
		value []byte
		ok    bool
	}
	latest := map[statemap.Hash]entry{}
	lo, hi := eventlog.DerivedKey(pendingBound(last.ThroughSeq+1)), eventlog.DerivedKey(pendingBound(through+1))
	err = v.Scan(lo, hi, false, func(k, val []byte) (bool, error) {
		key, value, ok, err := decodePending(val)
		if err != nil || len(k) != 1+1+8+32 {
			return false, storeErr(fmt.Errorf("pending state change %x: %w", k, errPending))
		}
		latest[statemap.Hash(k[10:])] = entry{key: key, value: slices.Clone(value), ok: ok}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	changes := make([]statemap.Change, 0, len(latest))
	for kh, e := range latest {
		if e.ok {
			changes = append(changes, statemap.Change{KeyHash: kh, ValueHash: statemap.HashValue(e.value)})
		} else {
			changes = append(changes, statemap.Change{KeyHash: kh, Delete: true})
		}
	}
	slices.SortFunc(changes, func(a, b statemap.Change) int { return compareHash(a.KeyHash, b.KeyHash) })

	w, err := log.DerivedWrites()
	if err != nil {
		return nil, err
	}
	cache := treeCache(log)
	r := &StateRound{StateCommit: StateCommit{ThroughSeq: through}, Changes: len(changes), w: w,
		cw: cache.Writer(treeWriter{w}), from: last.Root}
	r.Root, r.Entries, err = statemap.Update(cache.Reader(treeReader{v}, last.Root), r.cw, changes)
	if err != nil {
		w.Close()
		return nil, storeErr(fmt.Errorf("update the state tree through seq %d: %w", through, err))
	}
	for kh, e := range latest {
		vk := append([]byte{valuePrefix}, kh[:]...)
		if e.ok {
			err = w.Set(vk, appendEntryValue(nil, e.key, e.value))
		} else {
			err = w.Delete(vk)
		}
		if err != nil {
			w.Close()
			return nil, storeErr(err)
		}
	}
	if err := w.DeleteRange(pendingBound(0), pendingBound(through+1)); err != nil {
		w.Close()
		return nil, storeErr(err)
	}
	return r, nil
}

// Commit writes the round, signed by the state.committed event at
// commitmentSeq (0: none yet).
func (r *StateRound) Commit(commitmentSeq uint64) error {
	r.CommitmentSeq = commitmentSeq
	if err := r.w.Set([]byte{commitPrefix}, r.StateCommit.encode()); err != nil {
		r.w.Close()
		return storeErr(err)
	}
	if err := r.w.Commit(); err != nil {
		return err
	}
	r.cw.Committed(r.from, r.Root)
	return nil
}

// Close drops a round that was not committed.
func (r *StateRound) Close() { r.w.Close() }

// RecordStateCommitment writes c, the tree's commit as it stands, as signed
// by the state.committed event at c.CommitmentSeq: for a node that wrote a
// round and stopped before it appended its commitment.
func RecordStateCommitment(log *eventlog.Log, c StateCommit) error {
	w, err := log.DerivedWrites()
	if err != nil {
		return err
	}
	if err := w.Set([]byte{commitPrefix}, c.encode()); err != nil {
		w.Close()
		return storeErr(err)
	}
	return w.Commit()
}

// StateEntryValue reads the value of the entry kh as the tree's commit in v
// holds it, and its key; ok is false for an entry the map does not hold.
func StateEntryValue(v *eventlog.ModelView, kh statemap.Hash) (key string, value []byte, ok bool, err error) {
	b, ok, err := v.Get(eventlog.DerivedKey(append([]byte{valuePrefix}, kh[:]...)))
	if err != nil {
		return "", nil, false, storeErr(err)
	}
	if !ok {
		return "", nil, false, nil
	}
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, false, storeErr(fmt.Errorf("state entry value %x: %w", kh, errPending))
	}
	return string(b[w : w+int(n)]), b[w+int(n):], true, nil
}

// ProveState proves key against the tree's commit in v: its value (nil when
// absent) and the tree proof.
func ProveState(v *eventlog.ModelView, key string) (value []byte, proof statemap.Proof, err error) {
	kh := statemap.HashKey(key)
	p, err := statemap.Prove(treeReader{v}, kh)
	if err != nil {
		return nil, statemap.Proof{}, storeErr(err)
	}
	_, value, ok, err := StateEntryValue(v, kh)
	if err != nil {
		return nil, statemap.Proof{}, err
	}
	if !ok {
		value = nil
	}
	return value, p, nil
}

func appendEntryValue(dst []byte, key string, value []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(append(dst, key...), value...)
}

func compareHash(a, b statemap.Hash) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

// treeReader is statemap's Reader over the tree's records in a view. Every
// read of the tree is a point read, which Pebble answers from its bloom
// filters and block cache without the seeks of a range read.
type treeReader struct{ v *eventlog.ModelView }

func (r treeReader) Get(key []byte) ([]byte, bool, error) { return r.v.Get(treeKey(key)) }

func treeKey(k []byte) []byte { return eventlog.DerivedKey(append([]byte{treePrefix}, k...)) }

// treeCacheBytes bounds each log's cache of its tree's records: at 100,000
// entries it holds every node, at a million the upper levels, which every
// round and proof read.
const treeCacheBytes = 32 << 20

// treeCaches holds each open log's cache of its tree (statemap.Cache),
// dropped when the log is collected.
var treeCaches sync.Map // weak.Pointer[eventlog.Log] → *statemap.Cache

// treeCache is log's cache of its tree's records, which the rounds read
// through and write through.
func treeCache(log *eventlog.Log) *statemap.Cache {
	k := weak.Make(log)
	if c, ok := treeCaches.Load(k); ok {
		return c.(*statemap.Cache)
	}
	c, loaded := treeCaches.LoadOrStore(k, statemap.NewCache(treeCacheBytes))
	if !loaded {
		runtime.AddCleanup(log, func(k weak.Pointer[eventlog.Log]) { treeCaches.Delete(k) }, k)
	}
	return c.(*statemap.Cache)
}

// treeWriter is statemap's Writer into a batch of derived writes.
type treeWriter struct{ w *eventlog.DerivedWrites }

func (w treeWriter) Set(key, value []byte) error {
	return w.w.Set(append([]byte{treePrefix}, key...), value)
}

func (w treeWriter) Delete(key []byte) error { return w.w.Delete(append([]byte{treePrefix}, key...)) }
