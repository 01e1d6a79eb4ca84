package projections

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"weak"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/statemap"
)

// The state tree lives beside the read models, in the log's derived space
// (eventlog.DerivedWrites), under keys of its own next to the changes the
// folds record ('p', statemap_changes.go):
//
//	't' ‖ record key            → the tree's records (statemap's layout); each
//	                              entry's locator is the seq of the change
//	                              that holds its value, which a proof hands out
//	'm'                         → the commit: through seq ‖ commitment seq ‖
//	                              root ‖ entries (8, 8, 32, 8 bytes)
//
// A round reads the tree and the changes through one view, and writes the
// tree's changed records, the deletion of the changes no entry holds any
// longer, and the commit in one batch: a crash leaves the tree at one commit
// or the next, never between.
const (
	treePrefix   = 't'
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

// version names the tree c is the commit of, for its cache
// (statemap.Cache): the root alone does not, since the entries' locators
// (the seqs of their values' changes) may differ between two trees of one
// root.
func (c StateCommit) version() statemap.Hash {
	return sha256.Sum256(binary.BigEndian.AppendUint64(c.Root[:len(c.Root):len(c.Root)], c.ThroughSeq))
}

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
// the changes after it and not yet written. Commit writes it; Close drops it.
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
// folded): it reads the last commit and the changes after it up to through
// in one view, and stages the new tree. It fails with ErrStateBehind when the
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
	// The newest change of each entry through seq through, and the changes
	// it supersedes.
	type newest struct {
		seq   uint64
		value statemap.Hash
		ok    bool
	}
	latest := map[statemap.Hash]newest{}
	var superseded [][]byte
	lo, hi := eventlog.DerivedKey(changeBound(last.ThroughSeq+1)), eventlog.DerivedKey(changeBound(through+1))
	err = v.Scan(lo, hi, false, func(k, val []byte) (bool, error) {
		c, err := decodeChange(val)
		if err != nil || len(k) != 1+1+8+32 {
			return false, storeErr(fmt.Errorf("state change %x: %w", k, errChange))
		}
		kh, seq := statemap.Hash(k[10:]), binary.BigEndian.Uint64(k[2:10])
		if prev, ok := latest[kh]; ok {
			superseded = append(superseded, changeKey(prev.seq, kh))
		}
		n := newest{seq: seq, ok: c.kind != changeAbsent}
		if n.ok {
			n.value = c.valueHash()
		}
		latest[kh] = n
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	changes := make([]statemap.Change, 0, len(latest))
	for kh, e := range latest {
		changes = append(changes, statemap.Change{KeyHash: kh, ValueHash: e.value, Delete: !e.ok, Loc: e.seq})
	}

	w, err := log.DerivedWrites()
	if err != nil {
		return nil, err
	}
	cache := treeCache(log)
	r := &StateRound{StateCommit: StateCommit{ThroughSeq: through}, Changes: len(changes), w: w,
		cw: cache.Writer(treeWriter{w}), from: last.version()}
	o, err := statemap.Apply(cache.Reader(treeReader{v}, r.from), r.cw, changes)
	if err != nil {
		w.Close()
		return nil, storeErr(fmt.Errorf("update the state tree through seq %d: %w", through, err))
	}
	r.Root, r.Entries = o.Root, o.Entries
	// Each entry's value is now its newest change, which the tree names:
	// the changes it superseded go, with those the tree released.
	for _, e := range o.Released {
		superseded = append(superseded, changeKey(e.Loc, e.KeyHash))
	}
	for _, k := range superseded {
		if err := w.Delete(k); err != nil {
			w.Close()
			return nil, storeErr(err)
		}
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
	r.cw.Committed(r.from, r.version())
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

// proveEntry proves the entry kh against the tree's commit in v, a view of
// log, and reads its key and value from the change the tree names.
func proveEntry(log *eventlog.Log, v *eventlog.ModelView, kh statemap.Hash) (p statemap.Proof, key string, value []byte, ok bool, err error) {
	c, err := StateTreeCommit(v)
	if err != nil {
		return statemap.Proof{}, "", nil, false, err
	}
	p, e, ok, err := statemap.ProveEntry(treeCache(log).Reader(treeReader{v}, c.version()), kh)
	if err != nil {
		return statemap.Proof{}, "", nil, false, storeErr(err)
	}
	if !ok {
		return p, "", nil, false, nil
	}
	b, found, err := v.Get(eventlog.DerivedKey(changeKey(e.Loc, kh)))
	if err != nil {
		return statemap.Proof{}, "", nil, false, storeErr(err)
	}
	key, value, err = changedValue(log, b, found, e.Loc)
	if err != nil || statemap.HashValue(value) != e.ValueHash {
		return statemap.Proof{}, "", nil, false, storeErr(fmt.Errorf("state entry %s: its change at seq %d: %w (%v)", kh, e.Loc, errChange, err))
	}
	return p, key, value, true, nil
}

// changedValue is the key and the value after it of the change record b at
// seq (found: the record exists), for an entry the map holds.
func changedValue(log *eventlog.Log, b []byte, found bool, seq uint64) (string, []byte, error) {
	if !found {
		return "", nil, errors.New("no such record")
	}
	ch, err := decodeChange(b)
	switch {
	case err != nil:
		return "", nil, err
	case ch.kind == changeValue:
		return ch.key, ch.value, nil
	case ch.kind == changeCreated:
		value, err := createdValue(log, seq)
		return ch.key, value, err
	}
	return "", nil, errors.New("the change removed the entry")
}

// createdValue is the value of the mission the mission.created at seq
// created, rendered from the event as the fold rendered it.
func createdValue(log *eventlog.Log, seq uint64) ([]byte, error) {
	ev, err := log.Event(seq)
	if err != nil {
		return nil, err
	}
	if ev.Type != events.TypeMissionCreated {
		return nil, fmt.Errorf("the event at seq %d is a %s", seq, ev.Type)
	}
	pl, err := payloadOf[events.MissionCreated](ev)
	if err != nil {
		return nil, err
	}
	var sv StateView
	return sv.missionValue(nil, createdMission(ev, pl))
}

// ProveState proves key against the tree's commit in v, a view of log,
// reading the tree through log's cache: its value (nil when absent) and the
// tree proof.
func ProveState(log *eventlog.Log, v *eventlog.ModelView, key string) (value []byte, proof statemap.Proof, err error) {
	p, _, value, _, err := proveEntry(log, v, statemap.HashKey(key))
	return value, p, err
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
