package eventlog

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// A checkpoint is the tree head signed by the node (docs/transparency.md): a C2SP
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
func (l *Log) VerifierKey() string { return l.signer.vkey }

// newNoteSigner makes the signer of the checkpoints of the node with key,
// once, at Open: the verifier key and its hash depend on the key alone.
func newNoteSigner(did string, pub ed25519.PublicKey, key ed25519.PrivateKey) (nodeNoteSigner, error) {
	name := "civnode/" + did
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return nodeNoteSigner{}, fmt.Errorf("note verifier key for %q: %w", name, err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nodeNoteSigner{}, fmt.Errorf("note verifier for %q: %w", name, err)
	}
	return nodeNoteSigner{name: name, hash: v.KeyHash(), key: key, vkey: vkey}, nil
}

// TreeCheckpoint is the signed checkpoint of the tree at the durable tip; on
// a mirror, the origin's checkpoint stored with its newest seal.
func (l *Log) TreeCheckpoint() (TreeHead, []byte, error) {
	if l.ReadOnly() {
		return l.mirrorCheckpoint(-1)
	}
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
// e.g. an export's event_count. A mirror has the origin's for the size of its
// stored seal only.
func (l *Log) TreeCheckpointAt(size int64) (TreeHead, []byte, error) {
	if l.ReadOnly() {
		return l.mirrorCheckpoint(size)
	}
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
	signed, err := note.Sign(&note.Note{Text: CheckpointText(l.Origin(), head)}, l.signer)
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

// nodeNoteSigner signs notes with the node key under the origin's name.
type nodeNoteSigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
	vkey string // the verifier key, served to observers
}

func (s nodeNoteSigner) Name() string                    { return s.name }
func (s nodeNoteSigner) KeyHash() uint32                 { return s.hash }
func (s nodeNoteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.key, msg), nil }

// OpenCheckpoint verifies a signed checkpoint of the node with did and public
// key pub and returns the tree head it names. It fails when the note is not
// signed by that key under the origin civnode/<did>, or its body is not a
// checkpoint of that origin.
func OpenCheckpoint(signed []byte, did string, pub ed25519.PublicKey) (TreeHead, error) {
	origin := "civnode/" + did
	vkey, err := note.NewEd25519VerifierKey(origin, pub)
	if err != nil {
		return TreeHead{}, fmt.Errorf("verifier key: %w", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return TreeHead{}, fmt.Errorf("verifier key: %w", err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		return TreeHead{}, fmt.Errorf("signature: %w", err)
	}
	return ParseCheckpointText(n.Text, origin)
}

// ParseCheckpointText reads a checkpoint body (origin, size, base64 root, and
// optional extension lines) whose origin must be origin. A size beyond
// MaxTreeSize is refused with ErrTreeSize.
func ParseCheckpointText(text, origin string) (TreeHead, error) {
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return TreeHead{}, fmt.Errorf("the checkpoint body is not origin, size and root, one per line")
	}
	if lines[0] != origin {
		return TreeHead{}, fmt.Errorf("origin %q, want %q", lines[0], origin)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return TreeHead{}, fmt.Errorf("tree size %q is not a decimal number", lines[1])
	}
	if err := CheckTreeSize(size); err != nil {
		return TreeHead{}, err
	}
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != 32 {
		return TreeHead{}, fmt.Errorf("root hash %q is not 32 bytes of base64", lines[2])
	}
	return TreeHead{Size: size, Root: tlog.Hash(root)}, nil
}

// checkBundleCheckpoint holds a bundle's checkpoint to the chain it came with.
func checkBundleCheckpoint(signed, did string, pub ed25519.PublicKey, want TreeHead) error {
	got, err := OpenCheckpoint([]byte(signed), did, pub)
	if err != nil {
		return err
	}
	if got.Size != want.Size {
		return fmt.Errorf("it covers %d events, the bundle holds %d", got.Size, want.Size)
	}
	if got.Root != want.Root {
		return fmt.Errorf("its root %s is not the root of the bundle's events, %s",
			base64.StdEncoding.EncodeToString(got.Root[:]), base64.StdEncoding.EncodeToString(want.Root[:]))
	}
	return nil
}
