package eventlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/internal/logkey"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures Open. The zero value of every field but Key has a default.
type Options struct {
	// Dir is the Pebble directory. Ignored when InMemory is set.
	Dir string
	// InMemory keeps the database in memory (tests).
	InMemory bool
	// Key is the node's Ed25519 signing key. Required unless PublicKey is set.
	Key ed25519.PrivateKey
	// PublicKey, with no Key, opens a mirror's log (mirror.go): the chain of
	// the node with this key, which the log never signs. Append, Decide and
	// SignNodeProof answer ErrReadOnly; Ingest adds the origin's events and
	// StoreSeal its checkpoints. A new one starts empty, as with Ingest.
	PublicKey ed25519.PublicKey
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives Pebble's and the log's messages; default slog.Default().
	Logger *slog.Logger
	// Models, if set, are the read models: each event is folded into them on the
	// sequencer and their writes are committed in the event's batch (doc.go,
	// "Read models"). Open brings them up to the chain's tip first.
	Models Folder
	// OnRebuild, if set, reports the progress of a catch-up or rebuild of the
	// read models at Open.
	OnRebuild RebuildProgress
	// OnCommit, if set, is called with each durable group of events in seq order,
	// before the appenders of that group are released. It runs on the commit path
	// and must be quick (stream publication). An error fails the log: the events
	// are durable, but the log takes no more writes.
	OnCommit func([]Event) error
	// OnTreeBuild, if set, reports the progress of building the Merkle tree
	// of a data directory from before it (treebuild.go), once, at Open.
	OnTreeBuild RebuildProgress
	// OnGroupCommit, if set, is told of every group the committer writes,
	// durable or failed (GroupCommit), for the node's metrics. It runs on the
	// commit path and must be quick.
	OnGroupCommit func(GroupCommit)
	// TailCheck is how many of the newest events Open verifies; default 1024.
	TailCheck int
	// ModelCacheSize bounds, in bytes of keys and values, the cache of durable
	// read-model values that decisions and folds read through (models.go);
	// default DefaultModelCacheSize.
	ModelCacheSize int64

	// Ingest opens a new, empty log without writing a genesis event: its
	// chain, genesis first, comes from elsewhere through Log.Ingest (an
	// import of an export bundle). On a log that has events it changes
	// nothing.
	Ingest bool

	// FS replaces Pebble's file system; tests use it to inject faults.
	FS vfs.FS
}

// Tip is the newest durable event.
type Tip struct {
	Seq    uint64
	ID     string
	Micros int64
}

// Log is an open event log. All methods are safe for concurrent use.
type Log struct {
	db *pebble.DB
	// sorted is the committer's scratch for a group's writes (sortedbatch.go).
	sorted sortedBatch
	// foldScratch is the sequencer's array for one fold's model writes.
	foldScratch []modelWrite
	key         ed25519.PrivateKey
	pub         ed25519.PublicKey
	did         string
	now         func() time.Time
	log         *slog.Logger
	onCommit    func([]Event) error
	onGroup     func(GroupCommit)
	models      Folder
	live        atomic.Pointer[modelSpace]
	// modelCache is Options.ModelCacheSize.
	modelCache int64
	// stalls counts Pebble's write stalls for StoreStats.
	stalls stallClock

	// The write path (doc.go, "Writes"): Append → reqs → sequencer →
	// signing workers → groups → committer → syncer.
	reqs    chan *request
	groups  chan *group
	stopped chan struct{}
	seq     sequencerState // owned by the sequencer goroutine

	closeMu sync.RWMutex
	closed  bool
	// hold, while set, refuses appends (hold.go).
	hold atomic.Pointer[Behind]

	// commitMu is held by the committer while it applies a group, and
	// unsynced counts the groups applied but not yet made the tip (commit.go):
	// Backup holds the one and waits for the other, so that it copies the
	// store at a tip it knows.
	commitMu sync.Mutex
	unsynced sync.WaitGroup
	// durable is what ModelView hands out: a snapshot renewed after each
	// commit (durablesnap.go).
	durable atomic.Pointer[durableSnapshot]

	mu         sync.RWMutex // guards the committed view below
	tip        Tip
	root       string
	typeCounts map[string]uint64
	failed     error
	damaged    map[string]bool // files a read found corrupt, logged once each

	auditMu   sync.Mutex
	auditLast int64

	torn *TornTail // what Open recovered from; nil for a clean end

	treeCache treeCache      // the newest tree head and checkpoint (treecheckpoint.go)
	signer    nodeNoteSigner // signs the checkpoints (treecheckpoint.go)
	// storedSeal is a mirror's newest stored seal of the origin (mirror.go).
	storedSeal atomic.Pointer[Seal]
}

// Open opens or creates the log. On a new database it writes the genesis event. On
// an existing one it refuses a key that is not the chain's (ErrWrongKey), and
// verifies the newest events: if they do not form a valid end of the chain, or
// cannot be read, it refuses to open with ErrCorrupt naming the seq.
func Open(opts Options) (*Log, error) {
	var pub ed25519.PublicKey
	switch {
	case len(opts.Key) == ed25519.PrivateKeySize:
		pub = opts.Key.Public().(ed25519.PublicKey)
	case opts.Key == nil && len(opts.PublicKey) == ed25519.PublicKeySize:
		pub, opts.Ingest = opts.PublicKey, true
	default:
		return nil, errors.New("open event log: node key is missing")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.TailCheck <= 0 {
		opts.TailCheck = 1024
	}
	if opts.ModelCacheSize <= 0 {
		opts.ModelCacheSize = DefaultModelCacheSize
	}
	cache := pebble.NewCache(blockCacheSize)
	defer cache.Unref() // the DB holds its own reference
	popts := pebbleOptions(cache)
	popts.Logger = pebbleLogger{opts.Logger}
	if seams.tune != nil {
		seams.tune(popts)
	}
	dir := opts.Dir
	if opts.InMemory {
		popts.FS, dir = vfs.NewMem(), ""
	}
	if opts.FS != nil {
		popts.FS = opts.FS
	}
	l := &Log{
		key: opts.Key, pub: pub, did: DIDKey(pub),
		now: opts.Now, log: opts.Logger, onCommit: opts.OnCommit, onGroup: opts.OnGroupCommit, models: opts.Models, modelCache: opts.ModelCacheSize,
		reqs:    make(chan *request, 1024),
		groups:  make(chan *group), // unbuffered: a group is handed over only when the committer is free
		stopped: make(chan struct{}),
		damaged: map[string]bool{},
	}
	signer, err := newNoteSigner(l.did, pub, opts.Key)
	if err != nil {
		return nil, err
	}
	l.signer = signer
	// Before Pebble replays the newest write-ahead log, which it would cut at a
	// torn tail or at damage alike, without a word (torn.go).
	fs := popts.FS
	if fs == nil {
		fs = vfs.Default
	}
	torn, err := checkWALTail(fs, dir)
	if err != nil {
		return nil, err
	}
	// Before Open: a compaction may meet a damaged block as soon as the DB is up.
	popts.EventListener = &pebble.EventListener{DataCorruption: l.sawCorruption}
	l.stalls.listen(popts.EventListener)                  // storestats.go
	popts.FS = newPacer(backgroundPace, &l.stalls).fs(fs) // pacedfs.go
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("open pebble: %w", storeFault(err))
	}
	l.db = db
	if err := l.load(opts.TailCheck); err != nil {
		db.Close()
		return nil, err
	}
	if torn != nil {
		torn.Seq, l.torn = l.tip.Seq, torn
		l.log.Warn(torn.Error())
	}
	if l.typeCounts == nil {
		l.typeCounts = map[string]uint64{} // an empty store, before its genesis
	}
	if l.ReadOnly() {
		if err := l.loadSeal(); err != nil {
			db.Close()
			return nil, err
		}
	}
	if l.tip.Seq == 0 && !opts.Ingest {
		if err := l.writeGenesis(); err != nil {
			db.Close()
			return nil, err
		}
	}
	if err := l.openModels(opts.OnRebuild); err != nil {
		db.Close()
		return nil, fmt.Errorf("open read models: %w", err)
	}
	var tree *treeFrontier
	if !seams.withoutTree {
		if tree, err = l.openTree(opts.OnTreeBuild); err != nil {
			db.Close()
			return nil, err
		}
	}
	l.seq = sequencerState{next: l.tip.Seq + 1, prev: l.tip.ID, lastMicros: l.tip.Micros, typeCounts: cloneCounts(l.typeCounts), tree: tree}
	if l.auditLast, err = l.lastAuditMicros(); err != nil {
		db.Close()
		return nil, err
	}
	go l.runSequencer()
	go l.runCommitter()
	return l, nil
}

// NodeDID is the did:key of the node key.
func (l *Log) NodeDID() string { return l.did }

// PublicKey is the node's Ed25519 public key.
func (l *Log) PublicKey() ed25519.PublicKey { return l.pub }

// Tip returns the newest durable event's position.
func (l *Log) Tip() Tip {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.tip
}

// RootHash is the id of the genesis event.
func (l *Log) RootHash() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.root
}

// Healthy returns nil while the log accepts writes, and the cause once it does
// not: a write that failed to become durable, or a read, by anyone, that met a
// damaged block of the store (ErrCorrupt).
func (l *Log) Healthy() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.failed
}

// fail puts the log in fail-stop: it takes no more writes. The first cause wins.
func (l *Log) fail(err error) {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = err
	}
	l.mu.Unlock()
	l.log.Error("event log write failed; refusing further writes", logkey.Err, err)
}

// Close waits for appends in flight to become durable and closes the database.
func (l *Log) Close() error {
	l.closeMu.Lock()
	if l.closed {
		l.closeMu.Unlock()
		return nil
	}
	l.closed = true
	close(l.reqs)
	l.closeMu.Unlock()
	<-l.stopped
	l.dropDurable()
	return l.db.Close()
}

// load reads the tip, root and type counts and checks the tail of the chain.
//
// Every fault the check finds is ErrCorrupt. A crash cannot tear an event
// from its group: each group of events, with its index entries, is one Pebble
// batch, which is one checksummed WAL record, and Pebble replays only whole
// records (a record cut short is a torn tail, which Open reported before
// Pebble dropped it; torn.go). So an event that is there but fails a check
// was changed after it was written, and one that cannot be read sits in a
// damaged block.
func (l *Log) load(tailCheck int) error {
	if err := l.checkSchema(); err != nil {
		return err
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceEvent}, UpperBound: []byte{spaceEvent + 1}})
	if err != nil {
		return fmt.Errorf("find the tip: %w", l.readFault(err))
	}
	defer it.Close()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return fmt.Errorf("find the tip: %w", l.readFault(err))
		}
		return nil
	}
	tipSeq := u64(it.Key()[1:])
	// The genesis event says whose chain this is. It is read first, so that the
	// wrong key is reported as such, whatever the tail check would find.
	genesis, err := l.readEvent(1, tipSeq)
	if err != nil {
		return tailFault(1, err)
	}
	if genesis.NodeDID != l.did {
		return fmt.Errorf("%w: the chain belongs to %s, the node key is %s", ErrWrongKey, genesis.NodeDID, l.did)
	}
	first := uint64(1)
	if tipSeq > uint64(tailCheck) {
		first = tipSeq - uint64(tailCheck) + 1
	}
	// Walk the tail forward. The event before the window supplies the first link.
	prev, prevMicros := "", int64(0)
	if first > 1 {
		ev, err := l.readEvent(first-1, tipSeq)
		if err != nil {
			return tailFault(first-1, err)
		}
		prev, prevMicros = ev.ID, ev.Time().UnixMicro()
	} else {
		prev = GenesisPrevHash
	}
	var last *Event
	for seq := first; seq <= tipSeq; seq++ {
		ev, err := l.readEvent(seq, tipSeq)
		if err != nil {
			return tailFault(seq, err)
		}
		micros, err := checkLink(ev, seq, prev, prevMicros, l.did)
		if err != nil {
			return chainErr(ErrCorrupt, seq, "%v", err)
		}
		u, ok := signedFromStored(ev.raw)
		if !ok {
			return chainErr(ErrCorrupt, seq, "stored event is malformed")
		}
		if err := (&link{ev: ev, u: u}).checkSignature(l.pub); err != nil {
			return chainErr(ErrCorrupt, seq, "%v", err)
		}
		if err := l.checkIndexes(ev, micros); err != nil {
			return err
		}
		prev, prevMicros, last = ev.ID, micros, ev
	}
	l.tip = Tip{Seq: last.Seq, ID: last.ID, Micros: prevMicros}
	l.root = genesis.ID
	l.typeCounts, err = l.loadTypeCounts()
	return err
}

// tailFault is the error of the tail check for a read of seq that failed: an
// event that is missing is ErrCorrupt at seq, as is one that cannot be read
// (readEvent names the range); any other error (the disk, not its contents)
// passes through.
func tailFault(seq uint64, err error) error {
	var ce *ChainError
	switch {
	case errors.As(err, &ce) && ce.Seq != 0:
		return err
	case errors.Is(err, ErrNotFound):
		return chainErr(ErrCorrupt, seq, "the event is missing")
	default:
		return fmt.Errorf("check the event at seq %d: %w", seq, err)
	}
}

// checkIndexes confirms that the index entries written with ev exist.
func (l *Log) checkIndexes(ev *Event, micros int64) error {
	for _, k := range [][]byte{timeKey(micros), typeKey(ev.Type, ev.Seq)} {
		_, closer, err := l.db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return chainErr(ErrCorrupt, ev.Seq, "index entry %x is missing", k[0])
		}
		if err != nil {
			var ce *ChainError
			if err := l.readFault(err); errors.As(err, &ce) {
				return chainErr(ErrCorrupt, ev.Seq, "index entry %x: %s", k[0], ce.Reason)
			}
			return fmt.Errorf("read index entry %x of seq %d: %w", k[0], ev.Seq, err)
		}
		closer.Close()
	}
	return nil
}

// loadTypeCounts skips through the type index one type at a time; the last entry
// of each type holds that type's count.
func (l *Log) loadTypeCounts() (map[string]uint64, error) {
	counts := map[string]uint64{}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceType}, UpperBound: []byte{spaceType + 1}})
	if err != nil {
		return nil, fmt.Errorf("load type counts: %w", l.readFault(err))
	}
	defer it.Close()
	for valid := it.First(); valid; {
		k := it.Key()
		typ := string(k[1 : len(k)-9])
		if !it.SeekLT(typeKeyEnd(typ)) {
			break
		}
		counts[typ] = u64(it.Value())
		valid = it.SeekGE(typeKeyEnd(typ))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("load type counts: %w", l.readFault(err))
	}
	return counts, nil
}

// lastAuditMicros is the key of the newest audit entry, 0 when there is none; a
// new entry's timestamp must exceed it.
func (l *Log) lastAuditMicros() (int64, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceAudit}, UpperBound: []byte{spaceAudit + 1}})
	if err != nil {
		return 0, fmt.Errorf("find the newest audit entry: %w", l.readFault(err))
	}
	defer it.Close()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return 0, fmt.Errorf("find the newest audit entry: %w", l.readFault(err))
		}
		return 0, nil
	}
	return int64(u64(it.Key()[1:])), nil
}

// writeGenesis appends the first event synchronously, before the pipeline starts.
// Its created_at is its own timestamp.
func (l *Log) writeGenesis() error {
	micros := l.now().UnixMicro()
	payload, err := json.Marshal(GenesisPayload{
		NodeDID:   l.did,
		PublicKey: base64.StdEncoding.EncodeToString(l.pub),
		CreatedAt: formatMicros(micros),
	})
	if err != nil {
		return fmt.Errorf("encode the genesis payload: %w", err)
	}
	st := sequencerState{next: 1, prev: GenesisPrevHash, lastMicros: micros - 1, typeCounts: map[string]uint64{},
		tree: newTreeFrontier()}
	p, err := st.chain(l, Draft{Type: TypeGenesis, Payload: json.RawMessage(payload)}, micros)
	if err != nil {
		return fmt.Errorf("chain the genesis event: %w", err)
	}
	p.sign(l.key)
	b := l.db.NewBatch()
	p.write(b)
	writeTree(b, []*pending{p})
	b.Set(metaSchemaKey, []byte(schemaVersion), nil)
	b.Set(metaTreeSizeKey, appendU64(nil, 1), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("write genesis: %w", err)
	}
	l.tip = Tip{Seq: 1, ID: p.ev.ID, Micros: p.micros}
	l.root = p.ev.ID
	l.typeCounts = st.typeCounts
	return nil
}

// pebbleLogger routes Pebble's messages to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), logkey.Component, "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), logkey.Component, "pebble")
}

// Fatalf must not return: Pebble would carry on as if the write had succeeded. It
// panics with a pebbleFatal, which the write paths turn into fail-stop (withFatal).
// Corruption found by a read does not come here: the log's DataCorruption hook
// takes it (corrupt.go).
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, logkey.Component, "pebble")
	panic(pebbleFatal(msg))
}

type pebbleFatal string

// withFatal runs a Pebble write and returns a fatal Pebble error as an error.
func withFatal(write func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg, ok := r.(pebbleFatal)
			if !ok {
				panic(r)
			}
			err = errors.New(string(msg))
		}
	}()
	return write()
}

func cloneCounts(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
