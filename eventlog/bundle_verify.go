package eventlog

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
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
}

// VerifyBundle checks an export bundle as an observer does, trusting nothing in it:
// every event's id, signature, seq, timestamp and prev_hash link from genesis to
// tip, that the genesis event names the signing key, and the bundle signature over
// root hash, tip hash and generated_at. It reads the bundle as a stream and holds a
// bounded number of events in memory. A fault in an event is a *ChainError naming
// its seq; a fault in the frame is a *ChainError with Seq 0 and ErrBadBundle.
func VerifyBundle(ctx context.Context, r io.Reader, progress func(seq uint64)) (BundleReport, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	bad := func(format string, args ...any) error { return chainErr(ErrBadBundle, 0, format, args...) }
	if err := expectDelim(dec, '{'); err != nil {
		return BundleReport{}, bad("%v", err)
	}
	strs := map[string]*string{}
	var rep BundleReport
	var pubB64, sigB64 string
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
		case key == "event_count":
			var n json.Number
			if err := dec.Decode(&n); err != nil {
				return BundleReport{}, bad("field event_count: %v", err)
			}
			v, err := strconv.ParseUint(n.String(), 10, 64)
			if err != nil {
				return BundleReport{}, bad("field event_count: %v", err)
			}
			count = &v
		case key == "events":
			cursor = newChainCursor(rep.NodeDID, nil)
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
	return rep, nil
}

// verifyBundleEvents reads the events array. The signing key is the one named by
// the genesis event's node_did; every later event must carry the same node_did.
func verifyBundleEvents(ctx context.Context, dec *json.Decoder, c *chainCursor, progress func(uint64)) error {
	if err := expectDelim(dec, '['); err != nil {
		return chainErr(ErrBadBundle, 0, "events: %v", err)
	}
	var first *Event
	var pending *link
	var countRead uint64 // read only by the goroutine that decodes
	read := func() *link {
		if !dec.More() {
			return nil
		}
		ev := &Event{}
		if err := dec.Decode(ev); err != nil {
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
	first = pending.ev
	if c.did == "" {
		c.did = first.NodeDID
	}
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
