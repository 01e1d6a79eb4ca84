package eventlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"golang.org/x/mod/sumdb/tlog"
	"io"
	"strconv"
)

// BundleReport describes a verified bundle.
type BundleReport struct {
	ExportID    string
	NodeDID     string
	GeneratedAt string
	RootHash    string
	TipHash     string
	EventCount  uint64
	// TreeRoot is the Merkle tree's root recomputed from the events
	// (docs/transparency.md), and Checkpoint whether the bundle carried a checkpoint,
	// which then verified under the chain's key and named that root and
	// EventCount. A bundle from before the tree has none.
	TreeRoot   tlog.Hash
	Checkpoint bool
}

// VerifyBundle checks an export bundle as an observer does, trusting nothing in it:
// every event's id, signature, seq, timestamp and prev_hash link from genesis to
// tip, that the genesis event names the signing key, and the bundle signature over
// root hash, tip hash and generated_at. It reads the bundle as a stream and holds a
// bounded number of events in memory. A fault in an event is a *ChainError naming
// its seq; a fault in the frame is a *ChainError with Seq 0 and ErrBadBundle.
//
// Only the bundle's values count: every signed byte is recomputed as JCS from
// them, so any faithful copy (pretty-printed, members in another order, strings
// re-escaped, numbers written another way) verifies as the original does, and
// fails at the same seq when a value was changed.
func VerifyBundle(ctx context.Context, r io.Reader, progress func(seq uint64)) (BundleReport, error) {
	return verifyBundle(ctx, r, progress, nil)
}

// verifyBundle is VerifyBundle, handing each event to sink, when set, in
// chain order as soon as it has verified and taken its place.
func verifyBundle(ctx context.Context, r io.Reader, progress func(seq uint64), sink func(*link) error) (BundleReport, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	bad := func(format string, args ...any) error { return chainErr(ErrBadBundle, 0, format, args...) }
	if err := expectDelim(dec, '{'); err != nil {
		return BundleReport{}, bad("%v", err)
	}
	strs := map[string]*string{}
	var rep BundleReport
	var pubB64, sigB64 string
	var checkpoint *string
	var count *uint64
	for _, f := range []struct {
		name string
		dst  *string
	}{{"export_id", &rep.ExportID}, {"node_did", &rep.NodeDID}, {"public_key", &pubB64},
		{"generated_at", &rep.GeneratedAt}, {"chain_root_hash", &rep.RootHash},
		{"chain_tip_hash", &rep.TipHash}, {"bundle_signature", &sigB64}} {
		strs[f.name] = f.dst
	}
	seen := map[string]bool{}
	var cursor *chainCursor
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return BundleReport{}, bad("%v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return BundleReport{}, bad("duplicate field %q", key)
		}
		seen[key] = true
		switch {
		case strs[key] != nil:
			if err := dec.Decode(strs[key]); err != nil {
				return BundleReport{}, bad("field %s: %v", key, err)
			}
		case key == "checkpoint":
			checkpoint = new(string)
			if err := dec.Decode(checkpoint); err != nil {
				return BundleReport{}, bad("field checkpoint: %v", err)
			}
		case key == "event_count":
			v, err := decodeWhole(dec)
			if err != nil {
				return BundleReport{}, bad("field event_count: %v", err)
			}
			count = &v
		case key == "events":
			// The chain's key is the one its genesis event names, wherever the
			// frame's node_did stands: members may come in any order, and the
			// outcome must not depend on it. The frame is checked against the
			// chain once both are read.
			cursor = newChainCursor("", nil)
			cursor.tree = newTreeFrontier()
			cursor.sink = sink
			if err := verifyBundleEvents(ctx, dec, cursor, progress); err != nil {
				return BundleReport{}, err
			}
		default:
			return BundleReport{}, bad("unknown field %q", key)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return BundleReport{}, bad("%v", err)
	}
	for name := range strs {
		if !seen[name] {
			return BundleReport{}, bad("missing field %s", name)
		}
	}
	switch {
	case cursor == nil || cursor.next == 1:
		return BundleReport{}, bad("bundle has no events")
	case count == nil:
		return BundleReport{}, bad("missing field event_count")
	case rep.NodeDID != cursor.did:
		return BundleReport{}, bad("node_did %s is not the chain's node %s", rep.NodeDID, cursor.did)
	case pubB64 != base64.StdEncoding.EncodeToString(cursor.pub):
		return BundleReport{}, bad("public_key does not match node_did")
	case rep.RootHash != cursor.root:
		return BundleReport{}, bad("chain_root_hash is not the genesis event's id")
	case rep.TipHash != cursor.tip:
		return BundleReport{}, bad("chain_tip_hash is not the last event's id")
	case *count != cursor.next-1:
		return BundleReport{}, bad("event_count %d, bundle holds %d events", *count, cursor.next-1)
	}
	if _, ok := parseTimestamp(rep.GeneratedAt); !ok {
		return BundleReport{}, bad("generated_at %q is malformed", rep.GeneratedAt)
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil || !ed25519.Verify(cursor.pub, sealedBytes(rep.RootHash, rep.TipHash, rep.GeneratedAt), sig) {
		return BundleReport{}, bad("bundle_signature does not verify")
	}
	if _, err := dec.Token(); err != io.EOF {
		return BundleReport{}, bad("data after the bundle")
	}
	rep.EventCount = *count
	rep.TreeRoot, _ = cursor.tree.root()
	if checkpoint != nil {
		if err := checkBundleCheckpoint(*checkpoint, cursor.did, cursor.pub, TreeHead{Size: int64(rep.EventCount), Root: rep.TreeRoot}); err != nil {
			return BundleReport{}, bad("checkpoint: %v", err)
		}
		rep.Checkpoint = true
	}
	return rep, nil
}

// verifyBundleEvents reads the events array. The signing key is the one named by
// the genesis event's node_did; every later event must carry the same node_did.
func verifyBundleEvents(ctx context.Context, dec *json.Decoder, c *chainCursor, progress func(uint64)) error {
	if err := expectDelim(dec, '['); err != nil {
		return chainErr(ErrBadBundle, 0, "events: %v", err)
	}
	var pending *link
	var countRead uint64 // read only by the goroutine that decodes
	read := func() *link {
		if !dec.More() {
			return nil
		}
		ev, err := decodeBundleEvent(dec)
		if err != nil {
			return &link{err: chainErr(ErrBrokenChain, countRead+1, "event does not decode: %v", err)}
		}
		countRead++
		return &link{ev: ev}
	}
	// The key must be known before the workers start, so the genesis event is read
	// ahead of the pipeline.
	pending = read()
	if pending == nil {
		return chainErr(ErrBadBundle, 0, "bundle has no events")
	}
	if pending.ev == nil {
		return pending.err
	}
	c.did = pending.ev.NodeDID
	pub, err := PublicKeyFromDID(c.did)
	if err != nil {
		return chainErr(ErrBadBundle, 0, "node_did: %v", err)
	}
	c.pub = pub
	next := func() *link {
		if pending != nil {
			k := pending
			pending = nil
			return k
		}
		return read()
	}
	if err := verifyPipeline(ctx, pub, next, c, progress); err != nil {
		return err
	}
	if err := expectDelim(dec, ']'); err != nil {
		return chainErr(ErrBadBundle, 0, "events: %v", err)
	}
	return nil
}

// An event's members, as bits of a set.
const (
	fieldID = 1 << iota
	fieldSeq
	fieldType
	fieldTimestamp
	fieldPrevHash
	fieldNodeDID
	fieldPayload
	fieldSignature
)

var eventFieldNames = [...]string{"id", "seq", "type", "timestamp", "prev_hash", "node_did", "payload", "signature"}

// decodeBundleEvent reads one event of a bundle by its values, so that any
// faithful copy of the bundle decodes to the same event: members in any order,
// any whitespace, any escapes. Each member must appear once under its exact
// name (encoding/json would match "Seq" or "SEQ" to a struct field, and take
// the last of two "seq"s), and no other member may appear: the signed bytes are
// the JCS of every member but id and signature, so an extra or renamed member
// would be outside what the signature covers.
func decodeBundleEvent(dec *json.Decoder) (*Event, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	ev := &Event{}
	seen := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var bit int
		switch key {
		case "id":
			bit, err = fieldID, dec.Decode(&ev.ID)
		case "seq":
			bit = fieldSeq
			ev.Seq, err = decodeWhole(dec)
		case "type":
			bit, err = fieldType, dec.Decode(&ev.Type)
		case "timestamp":
			bit, err = fieldTimestamp, dec.Decode(&ev.Timestamp)
		case "prev_hash":
			bit, err = fieldPrevHash, dec.Decode(&ev.PrevHash)
		case "node_did":
			bit, err = fieldNodeDID, dec.Decode(&ev.NodeDID)
		case "payload":
			bit, err = fieldPayload, dec.Decode(&ev.Payload)
		case "signature":
			bit, err = fieldSignature, dec.Decode(&ev.Signature)
		default:
			return nil, fmt.Errorf("unknown field %q", key)
		}
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", key, err)
		}
		if seen&bit != 0 {
			return nil, fmt.Errorf("duplicate field %q", key)
		}
		seen |= bit
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	for i, name := range eventFieldNames {
		if seen&(1<<i) == 0 {
			return nil, fmt.Errorf("missing field %s", name)
		}
	}
	return ev, nil
}

// decodeWhole reads a JSON number by its value: the integer that its canonical
// form (RFC 8785) writes, so 3, 3.0 and 3e0 are all 3, as they are to any JSON
// reader that holds numbers as doubles. A string such as "3" is not a number.
func decodeWhole(dec *json.Decoder) (uint64, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, err
	}
	canon, err := canonicalJSON(raw)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(canon), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a whole number", raw)
	}
	return v, nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("unexpected end of input, want %q", d)
		}
		return err
	}
	if tok != d {
		return fmt.Errorf("found %v, want %q", tok, d)
	}
	return nil
}
