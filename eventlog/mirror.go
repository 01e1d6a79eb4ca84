package eventlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A mirror's log (Options.PublicKey without Options.Key) holds another node's
// chain: it has that node's public key and no private key, so it never signs.
// Its events come through Ingest, each checked against the key; its
// checkpoints and its export's seal are the origin's own, stored by StoreSeal
// as they arrived, so whatever it serves verifies exactly as the origin's.

// Seal is what makes an export the node's: bundle_signature over the JCS of
// {"chain_root_hash","chain_tip_hash","generated_at"} (docs/wire-formats.md),
// with the signed checkpoint of the same event_count. A node signs one for its
// tip (Log.Seal); a mirror stores the origin's (StoreSeal) and exports the
// chain up to it with that very seal.
type Seal struct {
	EventCount  uint64 `json:"event_count"`
	RootHash    string `json:"chain_root_hash"`
	TipHash     string `json:"chain_tip_hash"`
	GeneratedAt string `json:"generated_at"`
	Signature   string `json:"bundle_signature"`
	Checkpoint  string `json:"checkpoint"`
}

// metaSealKey holds a mirror's newest stored Seal, as JSON.
var metaSealKey = []byte{spaceMeta, 's', 'e', 'a', 'l'}

// ReadOnly reports whether the log is a mirror's, which never signs.
func (l *Log) ReadOnly() bool { return l.key == nil }

// Seal is the seal of the chain at the durable tip, signed now; on a mirror it
// is the origin's newest stored seal (ErrNotFound before the first).
func (l *Log) Seal() (Seal, error) {
	if l.ReadOnly() {
		s := l.storedSeal.Load()
		if s == nil {
			return Seal{}, fmt.Errorf("%w: the mirror holds no seal of the origin yet", ErrNotFound)
		}
		return *s, nil
	}
	return l.exportSeal(time.Time{})
}

// ParseSeal reads a seal as JSON, refusing unknown fields, trailing data and
// an event_count beyond MaxTreeSize (ErrTreeSize).
func ParseSeal(b []byte) (Seal, error) {
	var s Seal
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Seal{}, fmt.Errorf("read the seal: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Seal{}, errors.New("read the seal: more than one JSON value")
	}
	if err := checkSealCount(s); err != nil {
		return Seal{}, fmt.Errorf("read the seal: %w", err)
	}
	return s, nil
}

// checkSealCount bounds a seal's event_count as every tree size from outside
// is (MaxTreeSize): it is the size of the tree a mirror then proves against.
func checkSealCount(s Seal) error {
	if s.EventCount > uint64(MaxTreeSize) {
		return fmt.Errorf("%w: the seal's event_count %d is beyond %d", ErrTreeSize, s.EventCount, MaxTreeSize)
	}
	return nil
}

// VerifySeal checks a seal with the key of the node with did and pub: its
// event_count, at most MaxTreeSize (ErrTreeSize), its bundle_signature, its
// generated_at, and its checkpoint, which must be of event_count events. It
// returns the checkpoint's tree head. It says nothing of the chain the seal
// names: StoreSeal holds it to the chain it has.
func VerifySeal(s Seal, did string, pub ed25519.PublicKey) (TreeHead, error) {
	if err := checkSealCount(s); err != nil {
		return TreeHead{}, err
	}
	if _, ok := parseTimestamp(s.GeneratedAt); !ok {
		return TreeHead{}, fmt.Errorf("the seal's generated_at %q is malformed", s.GeneratedAt)
	}
	sig, err := base64.StdEncoding.DecodeString(s.Signature)
	if err != nil || !ed25519.Verify(pub, sealedBytes(s.RootHash, s.TipHash, s.GeneratedAt), sig) {
		return TreeHead{}, errors.New("the seal's bundle_signature does not verify")
	}
	head, err := OpenCheckpoint([]byte(s.Checkpoint), did, pub)
	if err != nil {
		return TreeHead{}, fmt.Errorf("the seal's checkpoint: %w", err)
	}
	if head.Size != int64(s.EventCount) {
		return TreeHead{}, fmt.Errorf("the seal is of %d events, its checkpoint of %d", s.EventCount, head.Size)
	}
	return head, nil
}

// StoreSeal keeps the origin's seal s on a mirror's log, from which it then
// serves its checkpoint (TreeCheckpoint) and its exports (WriteBundle). The
// log must hold the chain s names: s verifies with the log's key, its
// checkpoint's root is the root of the log's tree of that size, and its root
// and tip hashes are the log's genesis id and the id of its event at
// event_count. A seal of fewer events than the one stored is refused: the
// mirror never goes back.
func (l *Log) StoreSeal(s Seal) error {
	if !l.ReadOnly() {
		return errors.New("store a seal: the log signs its own")
	}
	head, err := VerifySeal(s, l.did, l.pub)
	if err != nil {
		return err
	}
	if old := l.storedSeal.Load(); old != nil && old.EventCount > s.EventCount {
		return fmt.Errorf("store a seal: it is of %d events, the one stored of %d", s.EventCount, old.EventCount)
	}
	if tip := l.Tip().Seq; s.EventCount > tip {
		return fmt.Errorf("store a seal: it is of %d events, the log holds %d", s.EventCount, tip)
	}
	root, err := l.TreeRoot(head.Size)
	if err != nil {
		return err
	}
	if root != head.Root {
		return fmt.Errorf("store a seal: its checkpoint's root is not the root of the log's tree of %d events", head.Size)
	}
	ev, err := l.Event(s.EventCount)
	if err != nil {
		return err
	}
	if ev.ID != s.TipHash || l.RootHash() != s.RootHash {
		return fmt.Errorf("store a seal: its chain_root_hash and chain_tip_hash are not the log's at %d events", s.EventCount)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := withFatal(func() error { return l.db.Set(metaSealKey, b, pebble.Sync) }); err != nil {
		return fmt.Errorf("store the seal: %w", storeFault(err))
	}
	l.storedSeal.Store(&s)
	l.cacheTreeHead(head, []byte(s.Checkpoint))
	return nil
}

// loadSeal reads a mirror's stored seal at Open.
func (l *Log) loadSeal() error {
	v, closer, err := l.db.Get(metaSealKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the stored seal: %w", l.readFault(err))
	}
	s, err := ParseSeal(v)
	closer.Close()
	if err != nil {
		return fmt.Errorf("%w: the stored seal: %v", ErrCorrupt, err)
	}
	if _, err := VerifySeal(s, l.did, l.pub); err != nil {
		return fmt.Errorf("%w: the stored seal: %v", ErrCorrupt, err)
	}
	l.storedSeal.Store(&s)
	return nil
}

// mirrorCheckpoint is a mirror's checkpoint of the tree of size events: the
// origin's, which it has only for the size of its stored seal.
func (l *Log) mirrorCheckpoint(size int64) (TreeHead, []byte, error) {
	s := l.storedSeal.Load()
	if s == nil {
		return TreeHead{}, nil, fmt.Errorf("%w: the mirror holds no checkpoint of the origin yet", ErrNotFound)
	}
	if size >= 0 && int64(s.EventCount) != size {
		return TreeHead{}, nil, fmt.Errorf("%w: the mirror holds the origin's checkpoint of %d events, not of %d", ErrReadOnly, s.EventCount, size)
	}
	head, err := OpenCheckpoint([]byte(s.Checkpoint), l.did, l.pub)
	return head, []byte(s.Checkpoint), err
}
