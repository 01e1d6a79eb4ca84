package transparency

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
)

// A checkpoint is worth only the key that signed it: every tool of this
// package opens one through OpenCheckpoint, with a verifier key it trusts, and
// never reads a size or root from an unverified note.

// Key is a parsed note verifier key of a civnode node:
// civnode/<did>+<8 hex key hash>+<base64(0x01 ‖ public key)>.
type Key struct {
	VerifierKey string
	Origin      string // the key's name, civnode/<did>, which is also the checkpoint's origin
	DID         string
	pub         ed25519.PublicKey
	v           note.Verifier
}

// ParseKey parses a verifier key and requires that it is a node's: an Ed25519
// key named civnode/<did>, where did is the did:key of that very key. A key
// named after one node but holding another's would let a checkpoint pass for
// the first node's.
func ParseKey(vkey string) (Key, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return Key{}, fmt.Errorf("verifier key %q: %w", vkey, err)
	}
	parts := strings.SplitN(vkey, "+", 3)
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) != 1+ed25519.PublicKeySize || raw[0] != 1 {
		return Key{}, fmt.Errorf("verifier key %q is not an Ed25519 key", vkey)
	}
	pub := ed25519.PublicKey(raw[1:])
	did, ok := strings.CutPrefix(v.Name(), "civnode/")
	if !ok {
		return Key{}, fmt.Errorf("verifier key %q is not a civnode node's: its name does not start with civnode/", vkey)
	}
	if want := eventlog.DIDKey(pub); did != want {
		return Key{}, fmt.Errorf("verifier key %q names %s but holds the key of %s", vkey, did, want)
	}
	return Key{VerifierKey: vkey, Origin: v.Name(), DID: did, pub: pub, v: v}, nil
}

// OpenCheckpoint verifies a signed checkpoint with k and returns the tree head
// it names. A note that k did not sign is ErrAnotherKey, naming the keys that
// did; a bad signature by k, a malformed note or a body that is not a
// checkpoint of k's origin are other errors.
func (k Key) OpenCheckpoint(signed []byte) (eventlog.TreeHead, error) {
	n, err := note.Open(signed, note.VerifierList(k.v))
	var unverified *note.UnverifiedNoteError
	if errors.As(err, &unverified) {
		var names []string
		for _, s := range unverified.Note.UnverifiedSigs {
			names = append(names, fmt.Sprintf("%s (key hash %08x)", s.Name, s.Hash))
		}
		return eventlog.TreeHead{}, fmt.Errorf("the checkpoint is %w: %s, not %s", ErrAnotherKey, strings.Join(names, ", "), k.VerifierKey)
	}
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("open the checkpoint with %s: %w", k.Origin, err)
	}
	head, err := eventlog.ParseCheckpointText(n.Text, k.Origin)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("read the checkpoint: %w", err)
	}
	return head, nil
}

// B64 is the form of a hash in checkpoints, proofs and messages.
func B64(h [32]byte) string { return base64.StdEncoding.EncodeToString(h[:]) }
