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
)

// link is one event on its way through a verification pipeline: workers check its
// id and signature in parallel, then the caller checks its place in the chain in order.
type link struct {
	ev  *Event
	u   []byte // signed bytes; computed by the worker when nil
	err error  // a fault found while reading or by the worker
	ok  chan struct{}
}

// checkSignature confirms that id = sha256(U) and that the signature over U
// verifies with pub.
func (k *link) checkSignature(pub ed25519.PublicKey) error {
	if k.u == nil {
		u, err := canonicalSigned(k.ev)
		if err != nil {
			return err
		}
		k.u = u
	}
	id := hashID(k.u)
	if hex.EncodeToString(id[:]) != k.ev.ID {
		return fmt.Errorf("id does not match the event's content")
	}
	sig, err := base64.StdEncoding.DecodeString(k.ev.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("signature is not 64 bytes of base64")
	}
	if !ed25519.Verify(pub, k.u, sig) {
		return fmt.Errorf("signature does not verify")
	}
	return nil
}

// canonicalSigned recomputes U from an event's fields, as an observer does.
// Fields other than the payload must have their exact formats, which also
// guarantees they need no JSON escaping.
func canonicalSigned(ev *Event) ([]byte, error) {
	if len(ev.ID) != idHexLen || !isLowerHex(ev.ID) {
		return nil, fmt.Errorf("id is not 64 lowercase hex digits")
	}
	if len(ev.PrevHash) != idHexLen || !isLowerHex(ev.PrevHash) {
		return nil, fmt.Errorf("prev_hash is not 64 lowercase hex digits")
	}
	if _, ok := parseTimestamp(ev.Timestamp); !ok {
		return nil, fmt.Errorf("timestamp %q is not RFC 3339 UTC with 6 fractional digits", ev.Timestamp)
	}
	if !ValidType(ev.Type) {
		return nil, fmt.Errorf("type %q is not dot notation", ev.Type)
	}
	if _, err := PublicKeyFromDID(ev.NodeDID); err != nil {
		return nil, err
	}
	payload, err := canonicalPayload(ev.Payload)
	if err != nil {
		return nil, err
	}
	return signedBytes(nil, ev.NodeDID, payload, ev.PrevHash, ev.Seq, ev.Timestamp, ev.Type), nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// chainCursor checks, in order, that each event takes the next place in the chain.
type chainCursor struct {
	did        string
	pub        ed25519.PublicKey
	next       uint64
	prev       string
	prevMicros int64
	root, tip  string
	// tree, if set, grows by each event's leaf, so a bundle's checkpoint can
	// be checked against the events themselves (bundle_verify.go).
	tree *treeFrontier
	// sink, if set, is given each event once it has taken its place.
	sink func(*link) error
}

func newChainCursor(did string, pub ed25519.PublicKey) *chainCursor {
	return &chainCursor{did: did, pub: pub, next: 1, prev: GenesisPrevHash}
}

func (c *chainCursor) advance(ev *Event) error {
	seq := c.next
	if ev.Seq != seq {
		return chainErr(ErrBrokenChain, seq, "event missing or out of order (found seq %d)", ev.Seq)
	}
	micros, err := checkLink(ev, seq, c.prev, c.prevMicros, c.did)
	if err != nil {
		return chainErr(ErrBrokenChain, seq, "%v", err)
	}
	if seq == 1 {
		if err := checkGenesis(ev, c.pub); err != nil {
			return chainErr(ErrBrokenChain, 1, "%v", err)
		}
		c.root = ev.ID
	}
	if c.tree != nil {
		var id [32]byte
		if _, err := hex.Decode(id[:], []byte(ev.ID)); err != nil {
			return chainErr(ErrBrokenChain, seq, "id is not hex: %v", err)
		}
		if _, _, err := c.tree.add(id); err != nil {
			return chainErr(ErrBrokenChain, seq, "merkle tree: %v", err)
		}
	}
	c.next, c.prev, c.prevMicros, c.tip = seq+1, ev.ID, micros, ev.ID
	return nil
}

// checkLink checks the fields that tie ev to the event before it.
func checkLink(ev *Event, seq uint64, prev string, prevMicros int64, did string) (int64, error) {
	if ev.Seq != seq {
		return 0, fmt.Errorf("seq is %d, want %d", ev.Seq, seq)
	}
	if ev.PrevHash != prev {
		return 0, fmt.Errorf("prev_hash %.12s… does not link to the previous event %.12s…", ev.PrevHash, prev)
	}
	if ev.NodeDID != did {
		return 0, fmt.Errorf("node_did %s is not the chain's node %s", ev.NodeDID, did)
	}
	micros, ok := parseTimestamp(ev.Timestamp)
	if !ok {
		return 0, fmt.Errorf("timestamp %q is malformed", ev.Timestamp)
	}
	if seq > 1 && micros <= prevMicros {
		return 0, fmt.Errorf("timestamp %s does not increase", ev.Timestamp)
	}
	return micros, nil
}

// checkGenesis requires the first event to be a genesis event that names the
// chain's key and node. It reads the payload's values, never its bytes: a copy of
// the event written with other whitespace, key order or escapes (a bundle piped
// through a pretty-printer) holds the same values under the same signature, and
// must verify the same way.
func checkGenesis(ev *Event, pub ed25519.PublicKey) error {
	if ev.Type != TypeGenesis {
		return fmt.Errorf("first event has type %q, want %s", ev.Type, TypeGenesis)
	}
	fields, err := payloadStrings(ev.Payload, "public_key", "node_did")
	if err != nil {
		return fmt.Errorf("genesis payload: %w", err)
	}
	if fields[0] != base64.StdEncoding.EncodeToString(pub) {
		return fmt.Errorf("genesis payload does not carry the node's public key")
	}
	if fields[1] != ev.NodeDID {
		return fmt.Errorf("genesis payload names node %q, the event's node_did is %s", fields[1], ev.NodeDID)
	}
	return nil
}

// payloadStrings returns the string values of the named members of a payload,
// read from its canonical form: a member is found by its exact name (never
// case-folded, as encoding/json matches struct fields), and a payload with a
// duplicate name has no canonical form, so it cannot say two things at once.
func payloadStrings(payload []byte, names ...string) ([]string, error) {
	canon, err := canonicalPayload(payload)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(canon, &members); err != nil {
		return nil, fmt.Errorf("decode payload: %w", err)
	}
	out := make([]string, len(names))
	for i, name := range names {
		raw, ok := members[name]
		if !ok {
			return nil, fmt.Errorf("no %s", name)
		}
		if err := json.Unmarshal(raw, &out[i]); err != nil || raw[0] != '"' {
			return nil, fmt.Errorf("%s is not a string", name)
		}
	}
	return out, nil
}

// verifyPipeline feeds links from next through parallel signature workers and
// hands them back in order to c. next returns nil at the end. Memory is bounded
// by the channel capacities, not by the chain's length.
func verifyPipeline(ctx context.Context, pub ed25519.PublicKey, next func() *link, c *chainCursor, progress func(uint64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *link, 256)
	ordered := make(chan *link, 256*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				if k.err == nil {
					k.err = k.checkSignature(pub)
				}
				close(k.ok)
			}
		}()
	}
	go func() {
		defer close(ordered)
		defer close(work)
		for {
			k := next()
			if k == nil {
				return
			}
			k.ok = make(chan struct{})
			select {
			case ordered <- k:
			case <-ctx.Done():
				return
			}
			work <- k
			if k.ev == nil { // a read fault ends the stream
				return
			}
		}
	}()
	defer wg.Wait()
	for k := range ordered {
		<-k.ok
		if k.ev == nil {
			cancel()
			return k.err
		}
		if k.err != nil {
			cancel()
			return chainErr(ErrBrokenChain, c.next, "%v", k.err)
		}
		if err := c.advance(k.ev); err != nil {
			cancel()
			return err
		}
		if c.sink != nil {
			if err := c.sink(k); err != nil {
				cancel()
				return err
			}
		}
		if progress != nil {
			progress(k.ev.Seq)
		}
	}
	return ctx.Err()
}

// VerifyReport summarises a verified chain.
type VerifyReport struct {
	Events   uint64
	RootHash string
	TipHash  string
	NodeDID  string
	// From is the first seq whose link to the event before it was checked: 1
	// when the whole chain was (Verify), higher for VerifyFrom, which checked
	// the genesis event and the events From-1..Events alone.
	From uint64
}

// Verify walks the whole local chain: every id, signature, seq, timestamp and
// link. It returns a *ChainError naming the first bad seq. progress, if set, is
// called with each verified seq.
func (l *Log) Verify(ctx context.Context, progress func(seq uint64)) (VerifyReport, error) {
	return l.VerifyFrom(ctx, 1, progress)
}

// VerifyFrom checks the chain from seq from to the tip as Verify checks the
// whole of it, and the genesis event, which says whose chain it is. The event
// at from-1 supplies the first link: its id and signature are checked, its own
// link is not; that part of the chain is what the caller already trusts (a
// checkpoint, VerifySince) or chose not to read. from 0 or 1 is Verify; from
// tip+1 checks the genesis event and the tip alone. progress, if set, is
// called with each verified seq from from on.
func (l *Log) VerifyFrom(ctx context.Context, from uint64, progress func(seq uint64)) (VerifyReport, error) {
	return l.verifyFrom(ctx, from, progress, nil)
}

// verifyFrom is VerifyFrom, handing each event to sink, when set, once it
// has taken its place.
func (l *Log) verifyFrom(ctx context.Context, from uint64, progress func(seq uint64), sink func(*link) error) (VerifyReport, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the scanner when the pipeline stops early
	tip := l.Tip()
	from = max(from, 1)
	if from > tip.Seq+1 {
		return VerifyReport{}, fmt.Errorf("verify from seq %d: the tip is seq %d", from, tip.Seq)
	}
	c := newChainCursor(l.did, l.pub)
	if from > 1 {
		if err := l.startAt(c, from, tip.Seq); err != nil {
			return VerifyReport{}, err
		}
	} else {
		// A walk from genesis also grows the Merkle tree over the ids it
		// checks, to hold the stored tree to the chain (docs/transparency.md).
		c.tree = newTreeFrontier()
	}
	c.sink = sink
	errs := make(chan error, 1)
	links := make(chan *link, 256)
	go func() {
		defer close(links)
		errs <- l.Scan(from, tip.Seq, func(ev *Event) error {
			u, ok := signedFromStored(ev.raw)
			if !ok {
				links <- &link{ev: ev, err: fmt.Errorf("stored event is malformed")}
				return nil
			}
			select {
			case links <- &link{ev: ev, u: u}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	next := func() *link {
		k, ok := <-links
		if !ok {
			return nil
		}
		return k
	}
	err := verifyPipeline(ctx, l.pub, next, c, progress)
	cancel()
	for range links { // let the scanner see the cancellation and finish
	}
	if scanErr := <-errs; err == nil && scanErr != nil {
		err = scanErr
	}
	if err != nil {
		return VerifyReport{}, err
	}
	if c.next-1 != tip.Seq {
		return VerifyReport{}, chainErr(ErrBrokenChain, c.next, "event missing (chain ends at %d, tip is %d)", c.next-1, tip.Seq)
	}
	if c.tree != nil {
		if err := l.checkTreeRoot(c.tree); err != nil {
			return VerifyReport{}, err
		}
	}
	return VerifyReport{Events: tip.Seq, RootHash: c.root, TipHash: c.tip, NodeDID: l.did, From: from}, nil
}

// startAt readies c to go on at seq from > 1: it checks the genesis event as
// the cursor checks it at the start of a full walk, and takes the first link
// from the event at from-1 once that event's id and signature verify.
func (l *Log) startAt(c *chainCursor, from, tip uint64) error {
	genesis, err := l.signedEvent(1, tip)
	if err != nil {
		return err
	}
	if err := c.advance(genesis); err != nil {
		return err
	}
	if from == 2 {
		return nil
	}
	prev, err := l.signedEvent(from-1, tip)
	if err != nil {
		return err
	}
	if prev.NodeDID != l.did {
		return chainErr(ErrBrokenChain, prev.Seq, "node_did %s is not the chain's node %s", prev.NodeDID, l.did)
	}
	micros, ok := parseTimestamp(prev.Timestamp)
	if !ok {
		return chainErr(ErrBrokenChain, prev.Seq, "timestamp %q is malformed", prev.Timestamp)
	}
	c.next, c.prev, c.prevMicros, c.tip = from, prev.ID, micros, prev.ID
	return nil
}

// signedEvent reads the event at seq and checks its id and signature; a fault
// is a *ChainError at seq, as Verify reports it (ErrCorrupt for a block that
// cannot be read).
func (l *Log) signedEvent(seq, tip uint64) (*Event, error) {
	var ev *Event
	if err := l.Scan(seq, seq, func(e *Event) error { ev = e; return nil }); err != nil {
		return nil, err
	}
	if ev == nil {
		return nil, chainErr(ErrBrokenChain, seq, "event missing (tip is %d)", tip)
	}
	if ev.Seq != seq {
		return nil, chainErr(ErrBrokenChain, seq, "seq is %d, want %d", ev.Seq, seq)
	}
	u, ok := signedFromStored(ev.raw)
	if !ok {
		return nil, chainErr(ErrBrokenChain, seq, "stored event is malformed")
	}
	if err := (&link{ev: ev, u: u}).checkSignature(l.pub); err != nil {
		return nil, chainErr(ErrBrokenChain, seq, "%v", err)
	}
	return ev, nil
}
