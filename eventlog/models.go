package eventlog

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// Folder is the read side as the log sees it: a deterministic fold of the chain
// into key-value state kept in the log's model space (doc.go, "Read models").
// The projections package implements it; the log knows nothing of what it keeps.
type Folder interface {
	// Version names the layout of the state Fold writes. When the version stored
	// with the models differs, Open rebuilds them from the chain.
	Version() string
	// Fold applies one event through tx. It runs on the sequencer, in seq order,
	// as soon as the event has its place in the chain, and its writes are
	// committed in the same batch as the event. An error fails the log: it means
	// the model store itself failed, not that the fold refused the event (a
	// refusal is the folder's to count and roll back, see ModelTxn.Rollback).
	Fold(tx *ModelTxn, ev *Event) error
}

// ModelReader reads model state. Values handed out must not be modified.
type ModelReader interface {
	Get(key []byte) (value []byte, ok bool, err error)
}

// modelEntry is a model write not yet in Pebble: nil value means deleted.
type modelEntry struct {
	value   []byte
	deleted bool
	// uncached marks a write the folds never read back (ModelTxn.SetIndex):
	// it enters the model cache only to replace a value already there.
	uncached bool
	seq      uint64 // of the event that wrote it
}

// modelWrite is one write of a group, in the order the folds made it.
type modelWrite struct {
	key string
	modelEntry
}

// modelSpace is one model key space (0x07 or 0x08): its prefix and the writes
// folded on the sequencer that are not in Pebble yet. Decisions read through
// the overlay, then Pebble, so a command sees every decision before it;
// queries read a durable snapshot (durablesnap.go), so they see durable state
// only.
//
// Below the overlay sits a cache of the values in Pebble, present or absent,
// bounded in bytes (Options.ModelCacheSize). It is write-through: every value
// the committer applies enters it (before its fsync, as Pebble itself shows it
// to the sequencer then; a failed fsync fails every group after it, so no
// decision made on such a value is acknowledged), so the keys decisions and
// folds read again and again (a counter, the slug a publisher names, the
// mission being claimed) are answered from memory once touched, without a
// Pebble read. A lookup of an absent key in Pebble must ask every level that
// could hold it, so a key read and found absent is cached too.
type modelSpace struct {
	db     *pebble.DB
	prefix byte

	mu      sync.RWMutex
	overlay map[string]modelEntry
	cache   map[string]modelEntry // values in Pebble; seq unused
	// cacheBytes is what cache holds (cachedSize); cacheMax bounds it.
	cacheBytes, cacheMax int64
	// settled counts settle calls, so that a value read from Pebble is cached
	// only if no commit settled in the meantime (it could be older than that).
	settled uint64
}

// DefaultModelCacheSize is the default of Options.ModelCacheSize: about
// 30,000 missions' records with their counters and index entries.
const DefaultModelCacheSize = 32 << 20

// cacheEntryOverhead is what a cached entry costs beyond its key and value
// bytes: the map slot and the string and slice headers.
const cacheEntryOverhead = 80

func cachedSize(k string, e modelEntry) int64 {
	return int64(len(k)+len(e.value)) + cacheEntryOverhead
}

func newModelSpace(db *pebble.DB, prefix byte, cacheMax int64) *modelSpace {
	return &modelSpace{db: db, prefix: prefix, overlay: map[string]modelEntry{}, cache: map[string]modelEntry{},
		cacheMax: cacheMax}
}

func (s *modelSpace) key(k []byte) []byte {
	return append([]byte{s.prefix}, k...)
}

// get reads the newest value: the overlay, the cache, then the database.
func (s *modelSpace) get(k []byte) ([]byte, bool, error) {
	s.mu.RLock()
	e, ok := s.overlay[string(k)]
	if !ok {
		e, ok = s.cache[string(k)]
	}
	gen := s.settled
	s.mu.RUnlock()
	if ok {
		return e.value, !e.deleted, nil
	}
	v, found, err := dbGet(s.db, s.key(k))
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	if s.settled == gen {
		s.cachePut(string(k), modelEntry{value: v, deleted: !found})
	}
	s.mu.Unlock()
	return v, found, nil
}

// cachePut caches e under k, evicting to stay within cacheMax. A value
// larger than an eighth of the cache (a mission's result) is not kept: it
// would push out many small, hot ones. s.mu must be held.
func (s *modelSpace) cachePut(k string, e modelEntry) {
	if old, ok := s.cache[k]; ok {
		s.cacheBytes -= cachedSize(k, old)
		delete(s.cache, k)
	}
	n := cachedSize(k, e)
	if n > s.cacheMax/8 {
		return
	}
	for s.cacheBytes+n > s.cacheMax && len(s.cache) > 0 {
		s.evict()
	}
	s.cache[k] = e
	s.cacheBytes += n
}

// evict drops about a quarter of the cache, in map order, which is random
// enough for a cache of hot keys: they come back at their next read.
func (s *modelSpace) evict() {
	n := len(s.cache)/4 + 1
	for k, e := range s.cache {
		if n--; n < 0 {
			break
		}
		s.cacheBytes -= cachedSize(k, e)
		delete(s.cache, k)
	}
}

type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

func dbGet(g getter, key []byte) ([]byte, bool, error) {
	v, closer, err := g.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read model key %q: %w", key[1:], storeFault(err))
	}
	out := slices.Clone(v)
	closer.Close()
	return out, true, nil
}

// stage moves the writes of one folded event into the overlay and into out,
// and returns tx's array emptied, for the next fold (foldInto's scratch).
func (s *modelSpace) stage(tx *ModelTxn, out *[]modelWrite) []modelWrite {
	if len(tx.writes) == 0 {
		return tx.writes
	}
	s.mu.Lock()
	for _, w := range tx.writes {
		s.overlay[w.key] = w.modelEntry
	}
	s.mu.Unlock()
	if *out == nil {
		*out = groupWrites.Get().([]modelWrite)
	}
	*out = append(*out, tx.writes...)
	clear(tx.writes)
	return tx.writes[:0]
}

// groupWrites recycles the arrays that hold a group's model writes from the
// sequencer's fold to the committer's settle: a group of 64 creates holds
// about 900 writes, which would otherwise grow a new array for every group.
var groupWrites = sync.Pool{New: func() any { return make([]modelWrite, 0, 1024) }}

// releaseWrites hands writes back to groupWrites once settle has copied what
// it keeps.
func releaseWrites(writes []modelWrite) {
	if cap(writes) == 0 || cap(writes) > 1<<16 {
		return
	}
	clear(writes)
	groupWrites.Put(writes[:0])
}

// apply adds writes to b.
func (s *modelSpace) apply(b batchWriter, writes []modelWrite) {
	for _, w := range writes {
		k := s.key([]byte(w.key))
		if w.deleted {
			b.Delete(k, nil)
		} else {
			b.Set(k, w.value, nil)
		}
	}
}

// settle drops from the overlay what writes put there, now that it is in Pebble,
// unless a later event has written the key again, and writes the values
// through to the cache. A deletion only updates a key already cached: the
// folds delete index entries, which they never read.
func (s *modelSpace) settle(writes []modelWrite) {
	s.mu.Lock()
	s.settled++
	for _, w := range writes {
		if e, ok := s.overlay[w.key]; ok && e.seq <= w.seq {
			delete(s.overlay, w.key)
		}
		if _, ok := s.cache[w.key]; ok || !(w.deleted || w.uncached) {
			s.cachePut(w.key, modelEntry{value: w.value, deleted: w.deleted})
		}
	}
	s.mu.Unlock()
}

// ModelTxn is the view one Fold call has: reads see the event's own writes,
// then every event folded before it (durable or not). Writes become durable
// with the event.
type ModelTxn struct {
	space  *modelSpace
	seq    uint64
	writes []modelWrite
	err    error // a write under a reserved key; fails the fold
	answer any   // Answer's value
}

// Seq is the seq of the event being folded.
func (t *ModelTxn) Seq() uint64 { return t.seq }

// Get reads key as the fold's own writes and every earlier event left it.
func (t *ModelTxn) Get(key []byte) ([]byte, bool, error) {
	for i := len(t.writes) - 1; i >= 0; i-- {
		if w := &t.writes[i]; w.key == string(key) {
			return w.value, !w.deleted, nil
		}
	}
	return t.space.get(key)
}

// Set writes value under key. value must not be modified afterwards. A key that
// is empty or starts with 0x00, which the log keeps for the space's own
// metadata, is not written and fails the fold.
func (t *ModelTxn) Set(key, value []byte) {
	t.put(key, modelEntry{value: value, seq: t.seq})
}

// SetIndex writes value under key as Set does, for an entry that folds and
// decisions do not read back, such as an index entry that only queries scan.
// It stays out of the model cache, which it would fill with keys no fold
// asks for, pushing out the records and counters they do.
func (t *ModelTxn) SetIndex(key, value []byte) {
	t.put(key, modelEntry{value: value, seq: t.seq, uncached: true})
}

// SetDerived writes value under the derived key key (DerivedKey), as
// SetIndex does: the record of a change that the owner of derived state
// consumes off the write path (DerivedWrites), such as the state map's
// pending entries. A fold never reads it back.
func (t *ModelTxn) SetDerived(key, value []byte) {
	if t.writes == nil {
		t.writes = make([]modelWrite, 0, 16)
	}
	t.writes = append(t.writes, modelWrite{key: string(DerivedKey(key)),
		modelEntry: modelEntry{value: value, seq: t.seq, uncached: true}})
}

// Delete removes key.
func (t *ModelTxn) Delete(key []byte) {
	t.put(key, modelEntry{deleted: true, seq: t.seq})
}

func (t *ModelTxn) put(key []byte, e modelEntry) {
	if len(key) == 0 || key[0] == 0 || key[0] == derivedByte {
		if t.err == nil {
			t.err = fmt.Errorf("model key %q is reserved", key)
		}
		return
	}
	if t.writes == nil {
		// A mission's creation writes about a dozen keys: one allocation.
		t.writes = make([]modelWrite, 0, 16)
	}
	t.writes = append(t.writes, modelWrite{key: string(key), modelEntry: e})
}

// Answer hands v to the caller of the Append or Decide that wrote the event,
// as Event.Folded: what the fold made of it, such as the record it wrote, so
// that the write can answer without reading the models again. v must not be
// modified afterwards. Call it last, once the fold has accepted the event:
// Rollback does not take an answer back. A rebuild drops it.
func (t *ModelTxn) Answer(v any) { t.answer = v }

// Answered is what the folds so far answered for this event (Answer), nil
// if none did: a later fold of the same event reads the record an earlier
// one made without decoding it again.
func (t *ModelTxn) Answered() any { return t.answer }

// Mark returns the position Rollback returns to.
func (t *ModelTxn) Mark() int { return len(t.writes) }

// Rollback discards the writes made since mark: a fold that refuses an event
// leaves the models as they were.
func (t *ModelTxn) Rollback(mark int) { t.writes = t.writes[:mark] }

// foldInto folds ev into sp through a new transaction, for the sequencer and
// for rebuilds alike, and returns the transaction whose writes are to be staged.
// The transaction collects its writes in scratch's array, which the caller
// hands again to the next fold once these writes are staged (copied).
func foldInto(f Folder, sp *modelSpace, ev *Event, scratch []modelWrite) (*ModelTxn, error) {
	tx := &ModelTxn{space: sp, seq: ev.Seq, writes: scratch[:0]}
	err := f.Fold(tx, ev)
	if err == nil {
		err = tx.err
	}
	if err != nil {
		return nil, fmt.Errorf("fold seq %d into read models: %w", ev.Seq, err)
	}
	return tx, nil
}

// ModelLatest returns a reader of the newest model state, including events that
// are sequenced but not yet durable. Commands read it inside Decide, where it
// holds every decision made before theirs; anything else reads a ModelView.
func (l *Log) ModelLatest() ModelReader { return latestReader{l} }

type latestReader struct{ l *Log }

func (r latestReader) Get(key []byte) ([]byte, bool, error) {
	sp := r.l.liveModels()
	if sp == nil {
		return nil, false, errNoModels
	}
	return sp.get(key)
}

// ModelView is a consistent, durable view of the model state: a Pebble snapshot.
// Close it when done.
type ModelView struct{ shared *durableSnapshot }

// ModelView returns a view of the durable model state. It sees what every
// released Append and Decide wrote, and nothing that is not durable.
//
// A snapshot taken at any moment would not do: Pebble shows a batch to its
// readers once it is applied, before the fsync a Sync commit then waits for,
// so it could hold a group that a crash of the machine could still take back.
// The view is the snapshot the committer takes after each commit's fsync and
// before it releases the group's callers (durableSnapshot), shared by every
// view made until the next commit: a query neither waits for a commit nor
// makes a snapshot of its own.
func (l *Log) ModelView() (*ModelView, error) {
	for {
		s := l.durable.Load()
		if s == nil {
			if l.liveModels() != nil {
				return nil, ErrClosed // Close let go of the last one
			}
			return nil, errNoModels
		}
		if s.acquire() {
			return &ModelView{shared: s}, nil
		}
		// Replaced and released since the load: the next one is there.
	}
}

// Get reads key; the value is a copy.
func (v *ModelView) Get(key []byte) ([]byte, bool, error) {
	return dbGet(v.shared.snap, append([]byte{v.shared.prefix}, key...))
}

// Scan calls fn for each key in [lower, upper) in key order, or in reverse key
// order when reverse is set, until fn returns false or an error. key and value
// are valid only during the call.
func (v *ModelView) Scan(lower, upper []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	prefix := v.shared.prefix
	lo := append([]byte{prefix}, lower...)
	var hi []byte
	if upper == nil {
		hi = []byte{prefix + 1}
	} else {
		hi = append([]byte{prefix}, upper...)
	}
	it, err := v.shared.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("scan read model: %w", storeFault(err))
	}
	defer it.Close()
	valid := it.First()
	if reverse {
		valid = it.Last()
	}
	for ; valid; valid = step(it, reverse) {
		more, err := fn(it.Key()[1:], it.Value())
		if err != nil || !more {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("scan read model: %w", storeFault(err))
	}
	return nil
}

func step(it *pebble.Iterator, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// Close releases the view.
func (v *ModelView) Close() {
	if v.shared != nil { // a second Close must not give back another's reference
		v.shared.release()
		v.shared = nil
	}
}

// PrefixEnd returns the first key after every key that starts with prefix, for
// ModelView.Scan's upper bound; nil when there is none.
func PrefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// modelsMeta keys live at the start of each model space.
var (
	modelVersionKey = []byte{0, 'v', 'e', 'r', 's', 'i', 'o', 'n'}
	modelAppliedKey = []byte{0, 'a', 'p', 'p', 'l', 'i', 'e', 'd'}
)
