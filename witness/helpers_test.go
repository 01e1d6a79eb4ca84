package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// memLog is a signed Merkle tree in memory: a log for the witness to check
// and the submitter to submit.
type memLog struct {
	mu     sync.Mutex
	origin string
	signer note.Signer
	vkey   string
	hashes []tlog.Hash // stored hashes (tlog.StoredHashes)
	size   int64
}

func newMemLog(t *testing.T, seed byte) *memLog {
	t.Helper()
	key := ed25519.NewKeyFromSeed(make32(seed))
	did := eventlog.DIDKey(key.Public().(ed25519.PublicKey))
	origin := "civnode/" + did
	skey, vkey := signerKey(t, origin, key)
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return &memLog{origin: origin, signer: s, vkey: vkey}
}

func make32(b byte) []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = b
	}
	return s
}

// signerKey is the note signer key of an Ed25519 key (note has no
// constructor from an existing key).
func signerKey(t *testing.T, name string, key ed25519.PrivateKey) (string, string) {
	t.Helper()
	vkey, err := note.NewEd25519VerifierKey(name, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, v.KeyHash(), b64raw(append([]byte{1}, key.Seed()...))), vkey
}

// append adds n leaves named by prefix.
func (l *memLog) append(t *testing.T, prefix string, n int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i < n; i++ {
		leaf := sha256.Sum256([]byte(prefix + strconv.FormatInt(l.size, 10)))
		hs, err := tlog.StoredHashes(l.size, leaf[:], tlog.HashReaderFunc(l.read))
		if err != nil {
			t.Fatal(err)
		}
		l.hashes = append(l.hashes, hs...)
		l.size++
	}
}

func (l *memLog) read(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = l.hashes[x]
	}
	return out, nil
}

func (l *memLog) TreeSize() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}

func (l *memLog) TreeCheckpoint() (eventlog.TreeHead, []byte, error) {
	return l.TreeCheckpointAt(l.TreeSize())
}

func (l *memLog) TreeCheckpointAt(size int64) (eventlog.TreeHead, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var root tlog.Hash
	if size > 0 {
		var err error
		if root, err = tlog.TreeHash(size, tlog.HashReaderFunc(l.read)); err != nil {
			return eventlog.TreeHead{}, nil, err
		}
	} else {
		root = sha256.Sum256(nil)
	}
	head := eventlog.TreeHead{Size: size, Root: root}
	signed, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(l.origin, head)}, l.signer)
	return head, signed, err
}

func (l *memLog) ProveConsistency(from, to int64) (tlog.TreeProof, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return tlog.ProveTree(to, from, tlog.HashReaderFunc(l.read))
}

// request is an add-checkpoint body from old to the log's current size.
func (l *memLog) request(t *testing.T, old int64) []byte {
	t.Helper()
	head, signed, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	body := "old " + strconv.FormatInt(old, 10) + "\n"
	if old > 0 && old < head.Size {
		proof, err := l.ProveConsistency(old, head.Size)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range proof {
			body += b64(h) + "\n"
		}
	}
	return []byte(body + "\n" + string(signed))
}

func b64raw(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

type ed25519PublicKey = ed25519.PublicKey

func ed25519Key(seed []byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(seed) }
