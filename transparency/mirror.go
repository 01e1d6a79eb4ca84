package transparency

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/witness"
)

// The problems Mirror reports besides those of Check (ErrForked,
// ErrRolledBack, ErrAnotherKey).

// MirrorOptions say where a mirror reads and keeps its evidence.
type MirrorOptions struct {
	// URL names the source in evidence files.
	URL string
	// API reads a node's API (its /v1/transparency/ routes) instead of a
	// published directory.
	API bool
	// Evidence is the path prefix of evidence files:
	// <Evidence>.evidence-<UTC time>-<problem>.json, mode 0600.
	Evidence string
	// Progress, if set, is called with the mirror's tip after each group of
	// events is stored.
	Progress func(seq uint64)
	// Witnesses, if any, are the cosignature/v1 verifier keys of witnesses
	// Quorum of which (default 1) must have cosigned the source's tree, none
	// longer ago than MaxAge (default DefaultMaxAge), before the mirror
	// takes an event of it: the source's checkpoint (a published
	// directory's checkpoint file, a node's witnessed checkpoint) must be
	// of the seal's tree and carry the cosignatures.
	Witnesses []string
	Quorum    int
	MaxAge    time.Duration
}

// Mirrored is what one Mirror did.
type Mirrored struct {
	// Result is unchanged, extended, not_witnessed (the source's tree is not
	// cosigned by the quorum required yet: no evidence, the follower waits),
	// or the problem: forked, rolled_back, another_key, bad_seal, bad_tiles,
	// bad_event.
	Result   string
	Old      eventlog.TreeHead // the origin's tree the mirror held before
	Head     eventlog.TreeHead // the tree of the source's seal
	Events   uint64            // events stored by this run
	Evidence string            // the evidence file, on a problem
	// Witnessed is the origin's newest cosigned checkpoint the source
	// served, of a tree the mirror holds, for the mirror to serve as the
	// origin does (keepWitnessed); nil when the source served none this run.
	Witnessed *witness.Witnessed
	// Served is the source's checkpoint that MirrorOptions.Witnesses were
	// asked about, cosigned by a quorum or not: a follower waiting for
	// cosignatures starts its back-off again once it changes.
	Served []byte
}

// A group of events is verified and stored together, one Ingest call and one
// fsync: mirrorGroup events (16 bundles), or fewer once they hold
// mirrorGroupBytes as served. At most three groups are in flight (one being
// read, one being checked, one being stored), so the memory a catch-up takes
// is bounded however large the origin's events and bundles are.
const (
	mirrorGroup      = 16 * BundleSize
	mirrorGroupBytes = 4 << 20
)

// maxBundleSize bounds an event bundle as served: BundleSize lines, each an
// event of at most eventlog.MaxEventSize bytes and its newline. A mirror
// never holds a bundle whole: it reads it a line at a time, and a line over
// eventlog.MaxEventSize is a bad event.
const maxBundleSize = BundleSize * (eventlog.MaxEventSize + 1)

// evidenceExcerpt is how much of a line over eventlog.MaxEventSize the
// evidence keeps.
const evidenceExcerpt = 64 << 10

// Mirror catches the mirror's log l up with the origin's chain at the source
// c serves: a published directory (checkpoint, seal, tile/, events/) or a
// node's API. It trusts nothing but the origin's key, the log's: the seal's
// bundle_signature and checkpoint must verify with it, the new tree must
// extend the one the mirror holds (a consistency proof computed from the
// source's tiles, each checked against the new root), every event of a bundle
// must be the leaf the signed tree holds at its place, and Ingest checks each
// event's id, signature and link. Bundles are read a line at a time and events
// stored as they verify, in groups of bounded size; the seal last, once the
// log holds its whole chain, so a run cut short, by kill -9 too, is simply run
// again. On a problem nothing that failed is stored: Mirror writes what the
// source served to a new evidence file and returns the problem (errors.Is
// ErrForked, ErrRolledBack, ErrAnotherKey, ErrBadSeal, ErrBadEvent) naming the
// seq or the checkpoint. A failure to reach the source is returned as it is,
// without evidence; Transient tells those a follower retries.
func Mirror(ctx context.Context, c *Client, l *eventlog.Log, opts MirrorOptions) (Mirrored, error) {
	k, err := ParseKey(l.VerifierKey())
	if err != nil {
		return Mirrored{}, err
	}
	m := &mirror{c: c, l: l, k: k, opts: opts, prefix: ""}
	if opts.API {
		m.prefix = "/v1/transparency"
	}
	return m.run(ctx)
}

type mirror struct {
	c      *Client
	l      *eventlog.Log
	k      Key
	opts   MirrorOptions
	prefix string

	rep    Mirrored
	stored []byte // the stored checkpoint, for evidence
	served []byte // the seal as served
}

func (m *mirror) run(ctx context.Context) (Mirrored, error) {
	var err error
	if m.served, err = m.c.get(ctx, m.prefix+"/"+SealFile); err != nil {
		return m.rep, err
	}
	if _, cp, err := m.l.TreeCheckpoint(); err == nil {
		m.stored = cp
		if m.rep.Old, err = m.k.OpenCheckpoint(cp); err != nil {
			return m.rep, fmt.Errorf("the mirror's stored checkpoint: %w", err)
		}
	} else if !errors.Is(err, eventlog.ErrNotFound) {
		return m.rep, err
	}
	seal, err := eventlog.ParseSeal(m.served)
	if err != nil {
		return m.problem("bad_seal", fmt.Errorf("%w: %w", ErrBadSeal, err), nil)
	}
	head, err := m.k.OpenCheckpoint([]byte(seal.Checkpoint))
	if errors.Is(err, ErrAnotherKey) {
		return m.problem("another_key", fmt.Errorf("the source's checkpoint: %w", err), nil)
	}
	if err == nil {
		_, err = eventlog.VerifySeal(seal, m.k.DID, m.k.pub)
	}
	if err != nil {
		return m.problem("bad_seal", fmt.Errorf("%w: %w", ErrBadSeal, err), nil)
	}
	m.rep.Head = head
	old := m.rep.Old
	tiles := &cachedTiles{ctx: ctx, c: m.c, prefix: m.prefix}
	hashes := tlog.TileHashReader(tlog.Tree{N: head.Size, Hash: head.Root}, tiles)
	switch {
	case head.Size < old.Size:
		return m.problem("rolled_back", fmt.Errorf("%w: the source's checkpoint has %d events, the mirror holds the origin's checkpoint of %d",
			ErrRolledBack, head.Size, old.Size), nil)
	case head.Size == old.Size && head.Root != old.Root:
		return m.problem("forked", fmt.Errorf("%w: the origin signed a tree of %d events with root %s, and earlier one of the same size with root %s",
			ErrForked, head.Size, B64(head.Root), B64(old.Root)), nil)
	case old.Size > 0 && head.Size > old.Size:
		proof, err := tlog.ProveTree(head.Size, old.Size, hashes)
		if err != nil {
			return m.rep, m.report(m.tilesError(err))
		}
		if err := tlog.CheckTree(proof, head.Size, head.Root, old.Size, old.Root); err != nil {
			return m.problem("forked", fmt.Errorf("%w: the origin's tree of %d events does not extend the tree of %d events the mirror holds (%v)",
				ErrForked, head.Size, old.Size, err), proof)
		}
	}
	// Events stored beyond the stored seal, by a run cut short before it
	// stored its seal, must be in the new tree too.
	tip := int64(m.l.Tip().Seq)
	if tip > old.Size {
		if tip > head.Size {
			return m.problem("rolled_back", fmt.Errorf("%w: the source's checkpoint has %d events, the mirror holds %d of the origin's events",
				ErrRolledBack, head.Size, tip), nil)
		}
		want, err := tlog.TreeHash(tip, hashes)
		if err != nil {
			return m.rep, m.report(m.tilesError(err))
		}
		got, err := m.l.TreeRoot(tip)
		if err != nil {
			return m.rep, err
		}
		if got != want {
			return m.problem("forked", fmt.Errorf("%w: the origin's tree of %d events does not hold the %d events the mirror stored from it",
				ErrForked, head.Size, tip), nil)
		}
	}
	// Witnesses are asked about only once the source's tree is known not to
	// be evidence: a fork or rollback signed by the origin proves itself,
	// witnessed or not, while a tree not cosigned yet proves nothing and
	// may be cosigned in a moment.
	var cosigned []byte
	if len(m.opts.Witnesses) > 0 {
		var err error
		if cosigned, err = m.requireWitnessed(ctx, head); err != nil {
			return m.rep, err
		}
	}
	if err := m.catchUp(ctx, hashes, tip, head.Size); err != nil {
		return m.rep, err
	}
	if head.Size == old.Size {
		m.rep.Result = "unchanged"
	} else {
		// A node catching up its own chain from its published tail
		// (ReadOnly false) signs its own seals.
		if m.l.ReadOnly() {
			if err := m.l.StoreSeal(seal); err != nil {
				return m.rep, fmt.Errorf("store the origin's seal of %d events: %w", head.Size, err)
			}
		}
		m.rep.Result = "extended"
	}
	if err := m.keepWitnessed(ctx, cosigned); err != nil {
		return m.rep, err
	}
	return m.rep, nil
}

// eventGroup is events of the source that are the tree's leaves at their
// places, seqs first to last, on their way to be checked and stored.
type eventGroup struct {
	first, last uint64
	evs         []*eventlog.Event
	lines       [][]byte // each event as served, for evidence
	bytes       int      // of lines
	checked     eventlog.Checked
	err         error // the reader's, the last thing it sends
}

// problemAt is a problem found by a stage of a run, with what the source
// served there. The run writes its evidence (report) once the other stages
// have stopped, so that one goroutine at a time writes evidence.
type problemAt struct {
	result string
	err    error
	path   string
	seq    uint64
	served []byte
}

func (p *problemAt) Error() string { return p.err.Error() }
func (p *problemAt) Unwrap() error { return p.err }

// report writes the evidence of a problem the run found, and returns the
// problem naming the file; any other error is returned as it is.
func (m *mirror) report(err error) error {
	var p *problemAt
	if !errors.As(err, &p) {
		return err
	}
	m.rep.Result = p.result
	return m.writeEvidence(p.err, nil, p.path, p.seq, p.served)
}

// catchUp stores the events tip+1 … size. Three stages overlap: the reader,
// which reads the bundles a line at a time and checks each event against the
// tree's leaf at its place; checkGroups, which checks each group's signatures
// on every core; and the storer, which commits the groups one after another.
// So the next group is read and its signatures checked while the one before
// is folded and synced.
func (m *mirror) catchUp(ctx context.Context, hashes tlog.HashReader, tip, size int64) error {
	if tip >= size {
		return nil
	}
	stages, cancel := context.WithCancel(ctx)
	defer cancel()
	read := make(chan *eventGroup)
	toStore := make(chan *eventGroup)
	stored := make(chan error, 1) // the storer's failure, or nil
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(read)
		if err := m.readBundles(stages, hashes, tip, size, read); err != nil {
			select {
			case read <- &eventGroup{err: err}:
			case <-stages.Done():
			}
		}
	})
	wg.Go(func() {
		var failed error
		for g := range toStore {
			if failed != nil {
				continue // drain; the first failure is the answer
			}
			if err := m.l.IngestChecked(stages, g.checked); err != nil {
				failed = m.chainProblem(g, err, size)
				cancel()
				continue
			}
			m.rep.Events += g.last - g.first + 1
			if m.opts.Progress != nil {
				m.opts.Progress(g.last)
			}
		}
		stored <- failed
	})
	err := m.checkGroups(stages, read, toStore, size)
	close(toStore)
	// The groups that checked are stored before the reader is stopped.
	if serr := <-stored; serr != nil {
		err = serr
	}
	cancel()
	wg.Wait()
	if err == nil {
		err = ctx.Err()
	}
	return m.report(err)
}

// checkGroups checks the signatures of each group the reader sends and hands
// it to the storer.
func (m *mirror) checkGroups(ctx context.Context, read <-chan *eventGroup, toStore chan<- *eventGroup, size int64) error {
	for g := range read {
		if g.err != nil {
			return g.err
		}
		c, err := m.l.CheckSigned(g.evs)
		if err != nil {
			return m.chainProblem(g, err, size)
		}
		g.checked, g.evs = c, nil
		select {
		case toStore <- g:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// chainProblem is the problem of a group whose events did not check or
// store: an event that broke the chain is a bad event, the line the source
// served its evidence.
func (m *mirror) chainProblem(g *eventGroup, err error, size int64) error {
	var ce *eventlog.ChainError
	if errors.As(err, &ce) && errors.Is(err, eventlog.ErrBrokenChain) && ce.Seq >= g.first && ce.Seq <= g.last {
		n := int64(ce.Seq-1) / BundleSize
		path := BundlePath(n, int(min(BundleSize, size-n*BundleSize)))
		return &problemAt{result: "bad_event", err: fmt.Errorf("%w: event %d in %s: %w", ErrBadEvent, ce.Seq, path, err),
			path: path, seq: ce.Seq, served: g.lines[ce.Seq-g.first]}
	}
	return fmt.Errorf("store events %d..%d: %w", g.first, g.last, err)
}

// readBundles reads the bundles that hold the events tip+1 … size and sends
// the events after tip, in groups of at most mirrorGroup events and about
// mirrorGroupBytes.
func (m *mirror) readBundles(ctx context.Context, hashes tlog.HashReader, tip, size int64, out chan<- *eventGroup) error {
	g := &eventGroup{}
	send := func() error {
		if len(g.evs) == 0 {
			return nil
		}
		select {
		case out <- g:
		case <-ctx.Done():
			return ctx.Err()
		}
		g = &eventGroup{}
		return nil
	}
	for n := tip / BundleSize; n*BundleSize < size; n++ {
		err := m.readBundle(ctx, hashes, n, tip, size, func(ev *eventlog.Event, line []byte) error {
			if len(g.evs) == 0 {
				g.first = ev.Seq
			}
			g.last = ev.Seq
			g.evs, g.lines, g.bytes = append(g.evs, ev), append(g.lines, line), g.bytes+len(line)
			if len(g.evs) >= mirrorGroup || g.bytes >= mirrorGroupBytes {
				return send()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return send()
}

// readBundle reads bundle n of a tree of size events a line at a time,
// checks that each event is the tree's leaf at its place, and passes those
// after tip to take as they check. A bundle that does not check is a
// *problemAt; one the source failed to serve whole is the failure to fetch
// it.
func (m *mirror) readBundle(ctx context.Context, hashes tlog.HashReader, n, tip, size int64, take func(*eventlog.Event, []byte) error) error {
	start := n * BundleSize
	w := min(BundleSize, size-start)
	path := BundlePath(n, int(w))
	indexes := make([]int64, w)
	for i := range indexes {
		indexes[i] = tlog.StoredHashIndex(0, start+int64(i))
	}
	leaves, err := hashes.ReadHashes(indexes)
	if err != nil {
		return m.tilesError(err)
	}
	body, err := m.c.open(ctx, m.prefix+"/"+path)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", path, err)
	}
	defer body.Close()
	r := bufio.NewReaderSize(io.LimitReader(body, maxBundleSize+1), 64<<10)
	bad := func(seq uint64, served []byte, format string, args ...any) error {
		return &problemAt{result: "bad_event", err: fmt.Errorf("%w: "+format, append([]any{ErrBadEvent}, args...)...),
			path: path, seq: seq, served: served}
	}
	for i := range w {
		seq := uint64(start + i + 1)
		line, err := readLine(r, eventlog.MaxEventSize)
		switch {
		case errors.Is(err, errLineTooLong):
			return bad(seq, line, "event %d in %s is over %d bytes, more than a node stores", seq, path, eventlog.MaxEventSize)
		case err == io.EOF:
			return bad(seq, line, "%s holds %d events, not %d", path, i, w)
		case err != nil:
			return fmt.Errorf("fetch %s: %w", path, err)
		}
		var ev eventlog.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return bad(seq, line, "event %d in %s: %v", seq, path, err)
		}
		id, err := hex.DecodeString(ev.ID)
		if ev.Seq != seq || err != nil || len(id) != 32 || tlog.RecordHash(id) != leaves[i] {
			return bad(seq, line, "event %d in %s is not the event the origin's tree holds at seq %d", seq, path, seq)
		}
		if int64(seq) > tip {
			if err := take(&ev, line); err != nil {
				return err
			}
		}
	}
	switch extra, err := readLine(r, evidenceExcerpt); {
	case err == io.EOF && len(extra) == 0:
		return nil
	case err == nil, err == io.EOF, errors.Is(err, errLineTooLong):
		return bad(uint64(start+w), extra, "%s holds more than %d events", path, w)
	default:
		return fmt.Errorf("fetch %s: %w", path, err)
	}
}

// readLine reads a line of r, without its newline, of at most limit bytes: a
// longer one is errLineTooLong, with its first evidenceExcerpt bytes. At the
// end of r it is io.EOF, with what the last line held: nothing when r ended
// with a newline.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		n := len(line) + len(frag)
		if err == nil {
			n-- // the newline
		}
		line = append(line, frag...)
		switch {
		case n > limit:
			return line[:min(len(line), evidenceExcerpt)], errLineTooLong
		case err == nil:
			return line[:n], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		}
		return line, err
	}
}

// problem ends a run with a problem and its evidence.
func (m *mirror) problem(result string, err error, proof tlog.TreeProof) (Mirrored, error) {
	return m.rep, m.problemErr(result, err, proof)
}

func (m *mirror) problemErr(result string, err error, proof tlog.TreeProof) error {
	m.rep.Result = result
	return m.writeEvidence(err, proof, "", 0, nil)
}

// writeEvidence keeps what the source served, in a new file that nothing
// later replaces (writeEvidenceFile), and adds its name to err.
func (m *mirror) writeEvidence(err error, proof tlog.TreeProof, path string, seq uint64, served []byte) error {
	now := time.Now().UTC()
	ev := struct {
		Problem          string      `json:"problem"`
		DetectedAt       string      `json:"detected_at"`
		URL              string      `json:"url"`
		VerifierKey      string      `json:"verifier_key"`
		StoredCheckpoint string      `json:"stored_checkpoint,omitempty"`
		ServedSeal       string      `json:"served_seal"`
		ConsistencyProof []tlog.Hash `json:"consistency_proof,omitempty"`
		Path             string      `json:"path,omitempty"`
		Seq              uint64      `json:"seq,omitempty"`
		Served           string      `json:"served,omitempty"`
		Error            string      `json:"error"`
	}{m.rep.Result, now.Format(time.RFC3339), m.opts.URL, m.k.VerifierKey, string(m.stored), string(m.served), proof, path, seq, string(served), err.Error()}
	b, merr := json.MarshalIndent(ev, "", "  ")
	if merr != nil {
		return fmt.Errorf("%w (and its evidence could not be encoded: %v)", err, merr)
	}
	file, werr := writeEvidenceFile(m.opts.Evidence, m.rep.Result, now, append(b, '\n'))
	if werr != nil {
		return fmt.Errorf("%w (and its evidence could not be written: %v)", err, werr)
	}
	m.rep.Evidence = file
	return fmt.Errorf("%w; what the source served is in %s", err, file)
}

// tilesError is the problem of tiles tlog.TileHashReader refused, which are
// not those of the signed tree (a *problemAt); a tile the source did not
// serve is the failure to fetch it, returned as it is.
func (m *mirror) tilesError(err error) error {
	var fe *tileFetchError
	if errors.As(err, &fe) {
		return fe.err
	}
	return &problemAt{result: "bad_tiles", err: fmt.Errorf("%s: %w: %w", m.c.via, errBadTiles, err)}
}

// tileFetchError is a tile the source did not serve, told apart from a tile
// that does not check once it has passed through tlog.
type tileFetchError struct{ err error }

func (e *tileFetchError) Error() string { return e.err.Error() }
func (e *tileFetchError) Unwrap() error { return e.err }

// cachedTiles reads hash tiles for tlog.TileHashReader, keeping those above
// level 0: each bundle's check reads its level-0 tile and the same few tiles
// above it, which TileHashReader checks again on every read.
type cachedTiles struct {
	ctx    context.Context
	c      *Client
	prefix string
	mu     sync.Mutex
	cache  map[string][]byte
}

func (h *cachedTiles) Height() int { return TileHeight }

func (h *cachedTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		p := TilePath(t)
		h.mu.Lock()
		b, ok := h.cache[p]
		h.mu.Unlock()
		if !ok {
			var err error
			if b, err = h.c.get(h.ctx, h.prefix+"/"+p); err != nil {
				return nil, &tileFetchError{err}
			}
			if t.L > 0 {
				h.mu.Lock()
				if h.cache == nil {
					h.cache = map[string][]byte{}
				}
				h.cache[p] = b
				h.mu.Unlock()
			}
		}
		out[i] = b
	}
	return out, nil
}

func (h *cachedTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// MirrorKey is the verifier key a new mirror pins: vkey when given, else the
// one the source serves (a published directory's verifier-key file, a node's
// GET /v1/transparency), which the mirror then trusts on first use.
func MirrorKey(ctx context.Context, c *Client, api bool, vkey string) (Key, error) {
	if vkey == "" {
		var err error
		if api {
			vkey, _, err = apiSource{c}.Head(ctx)
		} else {
			var b []byte
			b, err = c.get(ctx, "/"+VerifierKeyFile)
			vkey = strings.TrimSpace(string(b))
		}
		if err != nil {
			return Key{}, fmt.Errorf("%w (or give the origin's key with --verifier-key)", err)
		}
	}
	return ParseKey(vkey)
}

// PublicKey is the key's Ed25519 public key.
func (k Key) PublicKey() ed25519.PublicKey { return k.pub }
