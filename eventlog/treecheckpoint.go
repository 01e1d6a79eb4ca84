package eventlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync/atomic"

	"golang.org/x/mod/sumdb/note"
)

// A checkpoint is the tree head signed by the node (wire.md §11): a C2SP
// tlog-checkpoint body — origin, size, base64 root, one per line — in a C2SP
// signed note, whose key name is the origin, civnode/<node_did>.

// treeCacheEntry is the newest tree head and, once asked for, its signed
// checkpoint: signing is an Ed25519 signature, so it is done once per tip and
// not per request.
type treeCacheEntry struct {
	head TreeHead
	note []byte // nil until signed
}

// treeCache is a field of Log (log.go): atomic.Pointer[treeCacheEntry].
type treeCache = atomic.Pointer[treeCacheEntry]

// Origin is the checkpoint's origin line and the note key's name.
func (l *Log) Origin() string { return "civnode/" + l.did }

// VerifierKey is the node's note verifier key,
// <name>+<8 hex key hash>+<base64(0x01 ‖ public key)>, for note.NewVerifier.
func (l *Log) VerifierKey() string {
	vkey, err := note.NewEd25519VerifierKey(l.Origin(), l.pub)
	if err != nil {
		// The name is civnode/did:key:z…, which is always a valid note name.
		panic(fmt.Sprintf("eventlog: note verifier key for %q: %v", l.Origin(), err))
	}
	return vkey
}

// TreeCheckpoint is the signed checkpoint of the tree at the durable tip.
func (l *Log) TreeCheckpoint() (TreeHead, []byte, error) {
	head, err := l.TreeHead()
	if err != nil {
		return TreeHead{}, nil, err
	}
	if c := l.treeCache.Load(); c != nil && c.head == head && c.note != nil {
		return head, c.note, nil
	}
	signed, err := l.signCheckpoint(head)
	if err != nil {
		return TreeHead{}, nil, err
	}
	l.cacheTreeHead(head, signed)
	return head, signed, nil
}

// TreeCheckpointAt is the signed checkpoint of the tree of the first size events,
// e.g. an export's event_count.
func (l *Log) TreeCheckpointAt(size int64) (TreeHead, []byte, error) {
	if c := l.treeCache.Load(); c != nil && c.head.Size == size && c.note != nil {
		return c.head, c.note, nil
	}
	root, err := l.TreeRoot(size)
	if err != nil {
		return TreeHead{}, nil, err
	}
	head := TreeHead{Size: size, Root: root}
	signed, err := l.signCheckpoint(head)
	return head, signed, err
}

// CheckpointText is the unsigned checkpoint body of head under origin.
func CheckpointText(origin string, head TreeHead) string {
	return origin + "\n" + strconv.FormatInt(head.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(head.Root[:]) + "\n"
}

func (l *Log) signCheckpoint(head TreeHead) ([]byte, error) {
	signed, err := note.Sign(&note.Note{Text: CheckpointText(l.Origin(), head)}, l.noteSigner())
	if err != nil {
		return nil, fmt.Errorf("sign the checkpoint of size %d: %w", head.Size, err)
	}
	return signed, nil
}

// cacheTreeHead keeps head (and its note, if signed) unless a newer head is
// cached already.
func (l *Log) cacheTreeHead(head TreeHead, signed []byte) {
	next := &treeCacheEntry{head: head, note: signed}
	for {
		old := l.treeCache.Load()
		if old != nil && old.head.Size > head.Size {
			return
		}
		if l.treeCache.CompareAndSwap(old, next) {
			return
		}
	}
}

// noteSigner signs notes with the node key under the origin's name.
func (l *Log) noteSigner() note.Signer {
	v, err := note.NewVerifier(l.VerifierKey())
	if err != nil {
		panic(fmt.Sprintf("eventlog: note verifier: %v", err))
	}
	return nodeNoteSigner{name: l.Origin(), hash: v.KeyHash(), key: l.key}
}

type nodeNoteSigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
}

func (s nodeNoteSigner) Name() string                    { return s.name }
func (s nodeNoteSigner) KeyHash() uint32                 { return s.hash }
func (s nodeNoteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }
