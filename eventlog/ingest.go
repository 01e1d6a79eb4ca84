package eventlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Ingest adds events that were signed elsewhere, with this log's key, to the
// chain. The events must take the next places in the chain, in order: their
// seqs follow the tip, each names the one before it, its id is the hash of its
// content and its signature verifies under the log's key. They go through the
// same sequencer and commit as Append (indexes, Merkle tree and read models in
// the event's own batch, one fsync per group), so a log filled by Ingest is
// the log that wrote them, byte for byte: each event is stored in the node's
// own form, rebuilt from its signed fields, whatever whitespace it came in.
//
// Either every event of a call is added or none is, and a fault names the seq
// with ErrBrokenChain. The first event of an empty log (Options.Ingest) must
// be the genesis event of the log's key.
func (l *Log) Ingest(ctx context.Context, evs []*Event) error {
	c, err := l.CheckSigned(evs)
	if err != nil {
		return err
	}
	return l.IngestChecked(ctx, c)
}

// Checked is events whose ids and signatures CheckSigned found good, ready
// for IngestChecked.
type Checked struct{ ps []*pending }

// CheckSigned is the first half of Ingest: it checks each event's id and
// signature under the log's key, on every core, and rebuilds its stored form.
// A caller that stores groups one after another (a mirror catching up) checks
// the next group while the one before is committed; where the events belong
// in the chain is IngestChecked's to check, in the order its calls arrive.
func (l *Log) CheckSigned(evs []*Event) (Checked, error) {
	ps := make([]*pending, len(evs))
	errs := make([]error, len(evs))
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), len(evs))
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(evs); i += workers {
				k := &link{ev: evs[i]}
				if errs[i] = k.checkSignature(l.pub); errs[i] == nil {
					ps[i], errs[i] = storedPending(k)
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return Checked{}, chainErr(ErrBrokenChain, evs[i].Seq, "%v", err)
		}
	}
	return Checked{ps}, nil
}

// IngestChecked is the second half of Ingest: it places the checked events
// at the tip, all or none, and returns once they are durable.
func (l *Log) IngestChecked(ctx context.Context, c Checked) error {
	_, err := l.submit(ctx, &request{stored: c.ps})
	return err
}

// ImportBundle verifies an export bundle as VerifyBundle does and adds its
// events to the log (Ingest) as they verify, in groups, reading the bundle
// once. The log must be empty (Options.Ingest) and the bundle's chain must be
// the log key's: its genesis event is checked against the key. A bundle that
// fails a check after some of its events were added leaves those events in
// the log; the caller imports into a new directory and removes it on failure.
func (l *Log) ImportBundle(ctx context.Context, r io.Reader, progress func(seq uint64)) (BundleReport, error) {
	imp, err := l.newImporter(ctx)
	if err != nil {
		return BundleReport{}, fmt.Errorf("import a bundle: %w", err)
	}
	rep, err := verifyBundle(ctx, r, progress, imp.add)
	if err == nil {
		err = imp.flush()
	}
	return rep, err
}

// ImportChain verifies src's chain as src.Verify does and adds its events to
// the log as they verify, in groups, reading the chain once: each signature
// is checked once, where Verify and then Ingest would check it twice. The
// log must be empty (Options.Ingest) and have src's key. A chain that fails a
// check after some of its events were added leaves those events in the log,
// as ImportBundle does.
func (l *Log) ImportChain(ctx context.Context, src *Log, progress func(seq uint64)) (VerifyReport, error) {
	imp, err := l.newImporter(ctx)
	if err != nil {
		return VerifyReport{}, fmt.Errorf("import a chain: %w", err)
	}
	if !l.pub.Equal(src.pub) {
		return VerifyReport{}, fmt.Errorf("import a chain: %w", ErrWrongKey)
	}
	rep, err := src.verifyFrom(ctx, 1, progress, imp.add)
	if err == nil {
		err = imp.flush()
	}
	return rep, err
}

// importGroup is how many verified events an importer adds in one Ingest
// group: one fsync each.
const importGroup = 1024

// importer adds verified events to an empty log in groups of importGroup.
type importer struct {
	ctx   context.Context
	l     *Log
	batch []*pending
}

func (l *Log) newImporter(ctx context.Context) (*importer, error) {
	if tip := l.Tip().Seq; tip != 0 {
		return nil, fmt.Errorf("the log already holds %d events", tip)
	}
	return &importer{ctx: ctx, l: l, batch: make([]*pending, 0, importGroup)}, nil
}

// add takes an event whose id, signature and place in the chain were checked.
func (imp *importer) add(k *link) error {
	p, err := storedPending(k)
	if err != nil {
		return chainErr(ErrBrokenChain, k.ev.Seq, "%v", err)
	}
	if imp.batch = append(imp.batch, p); len(imp.batch) == importGroup {
		return imp.flush()
	}
	return nil
}

// flush adds the events taken since the last flush and returns once they are
// durable.
func (imp *importer) flush() error {
	if len(imp.batch) == 0 {
		return nil
	}
	_, err := imp.l.submit(imp.ctx, &request{stored: imp.batch})
	imp.batch = make([]*pending, 0, importGroup)
	return err
}

// storedPending turns an event whose id and signature have been checked
// (k.u holds its signed bytes) into one ready to be placed in the chain, in
// the stored form the log itself would have written. An event read from
// another log is in that form already, and is taken as it was decoded
// there rather than decoded again.
func storedPending(k *link) (*pending, error) {
	micros, ok := parseTimestamp(k.ev.Timestamp)
	if !ok {
		return nil, fmt.Errorf("timestamp %q is malformed", k.ev.Timestamp)
	}
	sig, err := base64.StdEncoding.DecodeString(k.ev.Signature)
	if err != nil {
		return nil, err
	}
	p := &pending{u: k.u, micros: micros}
	if _, err := hex.Decode(p.id[:], []byte(k.ev.ID)); err != nil {
		return nil, fmt.Errorf("id is not hex: %w", err)
	}
	stored := storedForm(k.u, p.id, sig)
	if bytes.Equal(stored, k.ev.raw) {
		p.ev = k.ev
		return p, nil
	}
	if p.ev, err = decodeStored(stored); err != nil {
		return nil, err
	}
	return p, nil
}

// placeStored chains the checked events of r at the sequencer's tip, all or
// none, and folds them; they are signed already.
func (l *Log) placeStored(g *group, r *request) {
	s := &l.seq
	next, prev, prevMicros := s.next, s.prev, s.lastMicros
	if next == 1 {
		prev = GenesisPrevHash
	}
	for _, p := range r.stored {
		micros, err := checkLink(p.ev, next, prev, prevMicros, l.did)
		if err == nil && next == 1 {
			err = checkGenesis(p.ev, l.pub)
		}
		if err != nil {
			r.err = chainErr(ErrBrokenChain, next, "%v", err)
			return
		}
		next, prev, prevMicros = next+1, p.ev.ID, micros
	}
	r.n = len(r.stored)
	for _, p := range r.stored {
		s.typeCounts[p.ev.Type]++
		p.ordinal = s.typeCounts[p.ev.Type]
		if s.tree != nil && s.treeErr == nil {
			p.treeFirst, p.tree, s.treeErr = s.tree.add(p.id)
		}
		s.next, s.prev, s.lastMicros = p.ev.Seq+1, p.ev.ID, p.micros
		g.pending = append(g.pending, p)
	}
	if err := s.treeErr; err != nil {
		l.fail(fmt.Errorf("extend the merkle tree: %w", err))
	}
	if err := l.fold(g, r.stored); err != nil {
		l.fail(err)
	}
}
