package eventlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/mod/sumdb/tlog"
)

// Append adds drafts to the chain as one unit and returns the events once they are
// durable. Concurrent callers share one Pebble batch and one fsync (group commit).
// Either every draft of a call is appended or none is.
func (l *Log) Append(ctx context.Context, drafts ...Draft) ([]Event, error) {
	// Canonicalise on the caller's goroutine: it runs in parallel with other
	// callers and keeps the sequencer, the one serial step, short.
	if l.ReadOnly() {
		return nil, ErrReadOnly
	}
	if err := l.held(); err != nil {
		return nil, err
	}
	payloads, err := canonicalDrafts(drafts)
	if err != nil {
		return nil, err
	}
	return l.submit(ctx, &request{drafts: drafts, payloads: payloads})
}

// Decide runs decide on the log's sequencer, serialised with every other append,
// and appends the drafts it returns as one unit. A decision therefore sees the
// effects of every decision before it, including those not yet durable, which lets
// commands check conflicts without holding a lock across an fsync. decide must be
// quick and must not call the log. If it returns an error nothing is appended and
// Decide returns that error.
func (l *Log) Decide(ctx context.Context, decide func() ([]Draft, error)) ([]Event, error) {
	if l.ReadOnly() {
		return nil, ErrReadOnly
	}
	if err := l.held(); err != nil {
		return nil, err
	}
	return l.submit(ctx, &request{decide: decide})
}

type request struct {
	drafts   []Draft
	payloads [][]byte // canonical payloads of drafts, when known before sequencing
	decide   func() ([]Draft, error)
	stored   []*pending // events signed elsewhere, checked but not yet placed (Ingest)
	pastHold bool       // AppendHeld: appended although the log holds
	n        int        // events this request put in its group
	events   []Event
	err      error
	done     chan struct{}
}

func (l *Log) submit(ctx context.Context, r *request) ([]Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.done = make(chan struct{})
	l.closeMu.RLock()
	if l.closed {
		l.closeMu.RUnlock()
		return nil, ErrClosed
	}
	if err := l.Healthy(); err != nil {
		l.closeMu.RUnlock()
		return nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	l.reqs <- r
	l.closeMu.RUnlock()
	// Once queued the request is decided and committed whatever the caller does,
	// so the caller waits for the outcome rather than report a false failure.
	<-r.done
	return r.events, r.err
}

// group is the unit of one Pebble batch and one fsync.
type group struct {
	reqs    []*request
	pending []*pending
	signed  sync.WaitGroup // one count per pending event until it is signed
	// models is the read models' writes for the group's events, committed in
	// the same batch (Options.Models).
	models []modelWrite
}

// pending is an event between sequencing and commit.
type pending struct {
	ev      *Event
	u       []byte
	id      [32]byte
	micros  int64
	ordinal uint64
	// tree is the stored hashes the event's leaf adds to the Merkle tree,
	// to be written at treeFirst onwards (tree.go).
	treeFirst int64
	tree      []tlog.Hash
}

// sequencerState is the chain position as seen by the sequencer, which runs ahead
// of what is durable.
type sequencerState struct {
	next       uint64
	prev       string
	lastMicros int64
	typeCounts map[string]uint64
	tree       *treeFrontier
	// treeErr is the first failure to extend the tree, which fails the log.
	treeErr error
}

// nextMicros keeps timestamps strictly increasing whatever the clock does.
func (s *sequencerState) nextMicros(now int64) int64 {
	if now <= s.lastMicros {
		return s.lastMicros + 1
	}
	return now
}

// canonicalDraft validates a draft and returns its canonical payload.
func canonicalDraft(d Draft) ([]byte, error) {
	if !ValidType(d.Type) {
		return nil, fmt.Errorf("%w: type %q", ErrInvalidDraft, d.Type)
	}
	if c, ok := d.Payload.(Canonical); ok {
		if c.b == nil {
			return nil, fmt.Errorf("%w: %s: empty Canonical payload", ErrInvalidDraft, d.Type)
		}
		return checkPayloadSize(d.Type, c.b)
	}
	raw, err := json.Marshal(d.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %s payload: %w", ErrInvalidDraft, d.Type, err)
	}
	payload, err := canonicalPayload(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidDraft, d.Type, err)
	}
	return checkPayloadSize(d.Type, payload)
}

func canonicalDrafts(drafts []Draft) ([][]byte, error) {
	payloads := make([][]byte, len(drafts))
	for i, d := range drafts {
		p, err := canonicalDraft(d)
		if err != nil {
			return nil, err
		}
		payloads[i] = p
	}
	return payloads, nil
}

// chain gives a draft its place: seq, timestamp, prev_hash and id.
func (s *sequencerState) chain(l *Log, d Draft, micros int64) (*pending, error) {
	payload, err := canonicalDraft(d)
	if err != nil {
		return nil, err
	}
	p := s.chainCanonical(l.did, d.Type, payload, micros)
	return p, s.treeErr
}

func (s *sequencerState) chainCanonical(did, typ string, payload []byte, micros int64) *pending {
	micros = s.nextMicros(micros)
	ts := formatMicros(micros)
	// Room for the stored form too: sign turns U into it in place.
	size := 128 + len(did) + len(payload) + len(s.prev) + 20 + len(ts) + len(typ) + storedSuffixLen
	u := signedBytes(make([]byte, 0, size), did, payload, s.prev, s.next, ts, typ)
	p := &pending{u: u, id: hashID(u), micros: micros}
	s.typeCounts[typ]++
	p.ordinal = s.typeCounts[typ]
	p.ev = &Event{ID: hex.EncodeToString(p.id[:]), Seq: s.next, Type: typ, Timestamp: ts, PrevHash: s.prev, NodeDID: did}
	payloadAt := len(`{"node_did":"`) + len(did) + len(`","payload":`)
	p.ev.Payload = json.RawMessage(u[payloadAt : payloadAt+len(payload)])
	if s.tree != nil && s.treeErr == nil {
		p.treeFirst, p.tree, s.treeErr = s.tree.add(p.id)
	}
	s.next++
	s.prev = p.ev.ID
	s.lastMicros = micros
	return p
}

func (p *pending) sign(key ed25519.PrivateKey) { p.signedWith(ed25519.Sign(key, p.u)) }

// signedWith gives p its signature, sig, made over U.
func (p *pending) signedWith(sig []byte) {
	p.ev.Signature = base64.StdEncoding.EncodeToString(sig)
	// U is not needed once signed, and the stored form is U with its closing
	// brace replaced by the id and signature: build it in U's array.
	p.ev.raw = appendStoredSuffix(p.u[:len(p.u)-1], p.id, sig)
	p.u = nil
	// Point the payload into the stored form so the event holds one copy.
	payloadAt := len(`{"node_did":"`) + len(p.ev.NodeDID) + len(`","payload":`)
	p.ev.Payload = json.RawMessage(p.ev.raw[payloadAt : payloadAt+len(p.ev.Payload)])
}

func (p *pending) write(b batchWriter) {
	seq := appendU64(nil, p.ev.Seq)
	b.Set(eventKey(p.ev.Seq), p.ev.raw, nil)
	b.Set(typeKey(p.ev.Type, p.ev.Seq), appendU64(nil, p.ordinal), nil)
	b.Set(timeKey(p.micros), seq, nil)
}

// runSequencer decides and chains requests in arrival order into the current
// group, handing each event to the signing workers at once, and passes the group
// to the committer when the committer is free. While the committer waits for a
// group's signatures, or for the syncer to take the group before (commit.go),
// every request that arrives joins the next group, so the group grows with the
// load and one fsync covers it all. A group stops growing at maxGroup events and
// waits for the committer only.
func (l *Log) runSequencer() {
	defer close(l.groups)
	signer := startSigner(l.key)
	defer signer.stop()
	var cur *group
	reqs := l.reqs
	for reqs != nil || cur != nil {
		if cur == nil {
			r, ok := <-reqs
			if !ok {
				reqs = nil
				continue
			}
			cur = &group{}
			l.sequence(cur, r, signer)
			continue
		}
		in := reqs
		if len(cur.pending) >= maxGroup {
			in = nil
		}
		select {
		case l.groups <- cur:
			cur = nil
		case r, ok := <-in:
			if !ok {
				reqs = nil
				continue
			}
			l.sequence(cur, r, signer)
		}
	}
}

// maxGroup bounds the events committed under one fsync, so that one batch,
// and the memory its events hold until it is durable, stays bounded whatever
// the load.
const maxGroup = 4096

// sequence decides and chains one request into g, all or nothing.
func (l *Log) sequence(g *group, r *request, signer *signer) {
	g.reqs = append(g.reqs, r)
	if r.stored != nil {
		l.placeStored(g, r)
		return
	}
	if l.seq.next == 1 {
		// Only Ingest may give an empty log (Options.Ingest) its genesis.
		r.err = fmt.Errorf("%w: the log has no genesis event yet", ErrInvalidDraft)
		return
	}
	// Again here, where a hold set while the request was queued is seen
	// before the request takes a seq.
	if !r.pastHold {
		if r.err = l.held(); r.err != nil {
			return
		}
	}
	drafts := r.drafts
	if r.decide != nil {
		var err error
		if drafts, err = r.decide(); err != nil {
			r.err = err
			return
		}
	}
	payloads := r.payloads
	if payloads == nil {
		var err error
		if payloads, err = canonicalDrafts(drafts); err != nil {
			r.err = err
			return
		}
	}
	now := l.now().UnixMicro()
	r.n = len(drafts)
	for i, d := range drafts {
		p := l.seq.chainCanonical(l.did, d.Type, payloads[i], now)
		p.ev.decoded = d.Decoded
		g.pending = append(g.pending, p)
	}
	mine := g.pending[len(g.pending)-r.n:]
	if err := l.seq.treeErr; err != nil {
		l.fail(fmt.Errorf("extend the merkle tree: %w", err))
	}
	if err := l.fold(g, mine); err != nil {
		// The events have their seqs, so they cannot be taken back: the log
		// stops, and the committer fails the whole group.
		l.fail(err)
	}
	g.signed.Add(r.n)
	for _, p := range mine {
		signer.jobs <- signJob{p, &g.signed}
	}
}

// fold folds the events of one request into the read models, before they are
// signed: the next decision on the sequencer must see them.
func (l *Log) fold(g *group, evs []*pending) error {
	sp := l.liveModels()
	if sp == nil {
		return nil
	}
	for _, p := range evs {
		tx, err := foldInto(l.models, sp, p.ev, l.foldScratch)
		if err != nil {
			return err
		}
		p.ev.folded = tx.answer
		l.foldScratch = sp.stage(tx, &g.models)
	}
	return nil
}

// signer signs events on every core; signing is the costliest step of an append.
type signer struct {
	jobs chan signJob
	done sync.WaitGroup
}

type signJob struct {
	p      *pending
	signed *sync.WaitGroup
}

// maxSignBatch is the most events a worker signs at once. A batch shares one
// field inversion (batchSigner), which eight already make a small part of
// each signature's cost; a larger one would leave the other workers idle
// while one signs what they could have split.
const maxSignBatch = 8

func startSigner(key ed25519.PrivateKey) *signer {
	s := &signer{jobs: make(chan signJob, 4096)}
	for range runtime.GOMAXPROCS(0) {
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			s.work(key)
		}()
	}
	return s
}

// work signs jobs with key until the channel closes, each time together with
// those already waiting behind it (up to maxSignBatch): it never waits to fill
// a batch.
func (s *signer) work(key ed25519.PrivateKey) {
	var b *batchSigner // made at the first job: a log that only reads has no key
	batch := make([]signJob, 0, maxSignBatch)
	msgs := make([][]byte, 0, maxSignBatch)
	sigs := make([][ed25519.SignatureSize]byte, maxSignBatch)
	for j := range s.jobs {
		if b == nil {
			b = newBatchSigner(key)
		}
		batch = s.waiting(append(batch[:0], j))
		msgs = msgs[:0]
		for _, j := range batch {
			msgs = append(msgs, j.p.u)
		}
		b.sign(msgs, sigs[:len(batch)])
		for i, j := range batch {
			j.p.signedWith(sigs[i][:])
			j.signed.Done()
		}
		clear(batch) // let the pendings and their bytes go
		clear(msgs)
	}
}

// waiting adds to batch the jobs already queued, up to its capacity.
func (s *signer) waiting(batch []signJob) []signJob {
	for len(batch) < cap(batch) {
		select {
		case j, ok := <-s.jobs:
			if !ok {
				return batch
			}
			batch = append(batch, j)
		default:
			return batch
		}
	}
	return batch
}

func (s *signer) stop() {
	close(s.jobs)
	s.done.Wait()
}
