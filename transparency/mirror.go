package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// The problems Mirror reports besides those of Check (ErrForked,
// ErrRolledBack, ErrAnotherKey).
var (
	// ErrBadEvent is an event of a bundle that is not the one the signed
	// tree holds at its place, or that does not verify.
	ErrBadEvent = errors.New("an event does not verify")
	// ErrBadSeal is a seal whose signature or checkpoint does not verify.
	ErrBadSeal = errors.New("the seal does not verify")
)

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
	// Result is unchanged, extended, or the problem: forked, rolled_back,
	// another_key, bad_seal, bad_tiles, bad_event.
	Result   string
	Old      eventlog.TreeHead // the origin's tree the mirror held before
	Head     eventlog.TreeHead // the tree of the source's seal
	Events   uint64            // events stored by this run
	Evidence string            // the evidence file, on a problem
}

// mirrorGroup is how many bundles are verified and stored together: one
// Ingest call, one fsync, 4096 events.
const mirrorGroup = 16

// Mirror catches the mirror's log l up with the origin's chain at the source
// c serves: a published directory (checkpoint, seal, tile/, events/) or a
// node's API. It trusts nothing but the origin's key, the log's: the seal's
// bundle_signature and checkpoint must verify with it, the new tree must
// extend the one the mirror holds (a consistency proof computed from the
// source's tiles, each checked against the new root), every event of a bundle
// must be the leaf the signed tree holds at its place, and Ingest checks each
// event's id, signature and link. Events are stored as they verify, in groups;
// the seal last, once the log holds its whole chain, so a run cut short, by
// kill -9 too, is simply run again. On a problem nothing that failed is
// stored: Mirror writes what the source served to a new evidence file and
// returns the problem (errors.Is ErrForked, ErrRolledBack, ErrAnotherKey,
// ErrBadSeal, ErrBadEvent) naming the seq or the checkpoint.
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
	if len(m.opts.Witnesses) > 0 {
		if path, served, err := m.checkWitnessed(ctx, head); err != nil {
			m.rep.Result = "not_witnessed"
			return m.rep, m.writeEvidence(err, nil, path, 0, served)
		}
	}
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
			return m.problem("bad_tiles", fmt.Errorf("%s: %w: %w", m.c.via, errBadTiles, err), nil)
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
			return m.problem("bad_tiles", fmt.Errorf("%s: %w: %w", m.c.via, errBadTiles, err), nil)
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
	if err := m.catchUp(ctx, hashes, tip, head.Size); err != nil {
		return m.rep, err
	}
	if head.Size == old.Size {
		m.rep.Result = "unchanged"
		return m.rep, nil
	}
	if err := m.l.StoreSeal(seal); err != nil {
		return m.rep, fmt.Errorf("store the origin's seal of %d events: %w", head.Size, err)
	}
	m.rep.Result = "extended"
	return m.rep, nil
}

// bundle is one event bundle as served and as read.
type bundle struct {
	n    int64
	path string
	body []byte
	err  error
}

// catchUp stores the events tip+1 … size, bundle by bundle, each checked
// against the tree's leaves; bundles are fetched ahead while the ones before
// are verified and stored.
func (m *mirror) catchUp(ctx context.Context, hashes tlog.HashReader, tip, size int64) error {
	if tip >= size {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first, last := tip/BundleSize, (size-1)/BundleSize
	fetched := make(chan *bundle, 2*mirrorGroup)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		defer close(fetched)
		for n := first; n <= last; n++ {
			b := &bundle{n: n, path: BundlePath(n, int(min(BundleSize, size-n*BundleSize)))}
			b.body, b.err = m.c.get(ctx, m.prefix+"/"+b.path)
			select {
			case fetched <- b:
			case <-ctx.Done():
				return
			}
			if b.err != nil {
				return
			}
		}
	})
	// Three stages overlap: the fetcher above, checkGroups, which checks
	// each group's leaves and signatures on every core, and the storer
	// below, which commits the groups one after another. So the next group's
	// signatures are checked while the one before is folded and synced.
	toStore := make(chan checkedGroup, 1)
	stored := make(chan *checkedGroup, 1) // the group that failed to store, or nil
	wg.Go(func() {
		var failed *checkedGroup
		for c := range toStore {
			if failed != nil {
				continue // drain; the first failure is the answer
			}
			if c.err = m.l.IngestChecked(ctx, c.evs); c.err != nil {
				failed = &c
				cancel()
				continue
			}
			m.rep.Events += c.last - c.first + 1
			if m.opts.Progress != nil {
				m.opts.Progress(c.last)
			}
		}
		stored <- failed
	})
	err := m.checkGroups(ctx, fetched, hashes, tip, size, last, toStore)
	close(toStore)
	if f := <-stored; f != nil {
		// After checkGroups has returned: the evidence is written by one
		// goroutine at a time.
		return m.storeError(f.group, f.first, f.last, f.err)
	}
	if err != nil {
		return err
	}
	return ctx.Err()
}

// checkedGroup is a group of bundles whose events checked, on its way to
// the storer: seqs first to last.
type checkedGroup struct {
	group       []*bundle
	first, last uint64
	evs         eventlog.Checked
	err         error // the storer's, if it failed
}

// checkGroups reads the fetched bundles, checks their events against the
// tree's leaves and their signatures, a group at a time, and hands each group
// to the storer.
func (m *mirror) checkGroups(ctx context.Context, fetched <-chan *bundle, hashes tlog.HashReader, tip, size, last int64, toStore chan<- checkedGroup) error {
	var group []*bundle
	var evs []*eventlog.Event
	for b := range fetched {
		if b.err != nil {
			return fmt.Errorf("fetch %s: %w", b.path, b.err)
		}
		got, err := m.verifyBundle(b, hashes, tip, size)
		if err != nil {
			return err
		}
		group, evs = append(group, b), append(evs, got...)
		if len(group) < mirrorGroup && b.n != last {
			continue
		}
		if len(evs) > 0 {
			c, err := m.l.CheckSigned(evs)
			if err != nil {
				return m.storeError(group, evs[0].Seq, evs[len(evs)-1].Seq, err)
			}
			select {
			case toStore <- checkedGroup{group: group, first: evs[0].Seq, last: evs[len(evs)-1].Seq, evs: c}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		group, evs = nil, nil
	}
	return nil
}

// storeError is the problem of a group whose events did not check or store:
// an event that broke the chain is a bad event of its bundle, with evidence.
func (m *mirror) storeError(group []*bundle, first, last uint64, err error) error {
	var ce *eventlog.ChainError
	if errors.As(err, &ce) && errors.Is(err, eventlog.ErrBrokenChain) {
		for _, g := range group {
			if int64(ce.Seq) > g.n*BundleSize && int64(ce.Seq) <= (g.n+1)*BundleSize {
				return m.badEvent(g, ce.Seq, err)
			}
		}
	}
	return fmt.Errorf("store events %d..%d: %w", first, last, err)
}

// verifyBundle reads bundle b of a tree of size events, checks that its
// events are the tree's leaves at their places, and returns those after tip.
func (m *mirror) verifyBundle(b *bundle, hashes tlog.HashReader, tip, size int64) ([]*eventlog.Event, error) {
	start := b.n * BundleSize
	w := min(BundleSize, size-start)
	indexes := make([]int64, w)
	for i := range indexes {
		indexes[i] = tlog.StoredHashIndex(0, start+int64(i))
	}
	leaves, err := hashes.ReadHashes(indexes)
	if err != nil {
		return nil, m.problemErr("bad_tiles", fmt.Errorf("%s: %w: %w", m.c.via, errBadTiles, err), nil)
	}
	body := b.body
	var out []*eventlog.Event
	for i := range w {
		seq := uint64(start + i + 1)
		line, rest, ok := bytes.Cut(body, []byte("\n"))
		if !ok {
			return nil, m.badEvent(b, seq, fmt.Errorf("%w: %s holds %d events, not %d", ErrBadEvent, b.path, i, w))
		}
		body = rest
		var ev eventlog.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, m.badEvent(b, seq, fmt.Errorf("%w: event %d in %s: %v", ErrBadEvent, seq, b.path, err))
		}
		id, err := hex.DecodeString(ev.ID)
		if ev.Seq != seq || err != nil || len(id) != 32 || tlog.RecordHash(id) != leaves[i] {
			return nil, m.badEvent(b, seq, fmt.Errorf("%w: event %d in %s is not the event the origin's tree holds at seq %d", ErrBadEvent, seq, b.path, seq))
		}
		if int64(seq) > tip {
			out = append(out, &ev)
		}
	}
	if len(body) != 0 {
		return nil, m.badEvent(b, uint64(start+w), fmt.Errorf("%w: %s holds more than %d events", ErrBadEvent, b.path, w))
	}
	return out, nil
}

// badEvent is the problem of an event at seq in bundle b.
func (m *mirror) badEvent(b *bundle, seq uint64, err error) error {
	if !errors.Is(err, ErrBadEvent) {
		err = fmt.Errorf("%w: event %d in %s: %w", ErrBadEvent, seq, b.path, err)
	}
	m.rep.Result = "bad_event"
	return m.writeEvidence(err, nil, b.path, seq, b.body)
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
				return nil, err
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

// checkWitnessed requires the source's checkpoint to be the origin's, of the
// seal's tree, and cosigned by a quorum of the required witnesses. It
// returns where the checkpoint was read and what was served, for evidence.
func (m *mirror) checkWitnessed(ctx context.Context, head eventlog.TreeHead) (string, []byte, error) {
	path := m.prefix + "/" + CheckpointFile
	if m.opts.API {
		path = m.prefix + "/checkpoint?witnessed=1"
	}
	signed, err := m.c.get(ctx, path)
	if err != nil {
		return path, nil, fmt.Errorf("%w: the source serves no witnessed checkpoint of the tree of %d events (%v)", ErrNotWitnessed, head.Size, err)
	}
	wh, err := m.k.OpenCheckpoint(signed)
	if err != nil {
		return path, signed, fmt.Errorf("%w: the source's checkpoint: %w", ErrNotWitnessed, err)
	}
	if wh != head {
		return path, signed, fmt.Errorf("%w: the source's checkpoint is of a tree of %d events, its seal of %d", ErrNotWitnessed, wh.Size, head.Size)
	}
	return path, signed, checkWitnessed(signed, CheckOptions{Witnesses: m.opts.Witnesses, Quorum: m.opts.Quorum, MaxAge: m.opts.MaxAge}, time.Now())
}
