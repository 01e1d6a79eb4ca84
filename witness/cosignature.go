package witness

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	tdnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// Cosignatures are C2SP tlog-cosignature's, made and checked by
// transparency-dev/formats/note, the implementation the ecosystem's witnesses
// (the omniwitness among them) run. What is ours is the policy around them: a
// witness names exactly one Ed25519 cosignature/v1 key, and a cosignature's
// time must be near the node's clock.

// cosignatureType is the signed-note key type of an Ed25519 cosignature/v1
// key (C2SP tlog-cosignature).
const cosignatureType = 0x04

// CosignatureVerifierKey is the note verifier key of a cosignature/v1 key:
// <name>+<8 hex key hash>+<base64(0x04 ‖ public key)>. It is "" when name is
// not a note key name or pub not an Ed25519 public key, which no parser
// takes.
func CosignatureVerifierKey(name string, pub ed25519.PublicKey) string {
	// formats writes a cosignature/v1 key only by converting the note key of
	// the same Ed25519 key (type 0x01), which note writes.
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return ""
	}
	cosigKey, err := tdnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		return ""
	}
	return cosigKey
}

// CosignatureSigner signs cosignature/v1 lines with a witness's Ed25519 key,
// dated by time.Now; it is transparency-dev/formats/note's signer, with the
// key's verifier key beside it.
type CosignatureSigner struct {
	note.Signer
	vkey string
}

// NewCosignatureSigner makes the signer of key under name.
func NewCosignatureSigner(name string, key ed25519.PrivateKey) (*CosignatureSigner, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("the cosignature key is not an Ed25519 private key")
	}
	vkey := CosignatureVerifierKey(name, key.Public().(ed25519.PublicKey))
	if vkey == "" {
		return nil, fmt.Errorf("cosignature key name %q is not a note key name", name)
	}
	// formats takes the key as a note signer key,
	// PRIVATE+KEY+<name>+<key hash>+<base64(0x04 ‖ seed)>; note has no
	// constructor from a key in hand.
	_, hashAndKey, _ := strings.Cut(vkey, "+")
	hash, _, _ := strings.Cut(hashAndKey, "+")
	s, err := tdnote.NewSignerForCosignatureV1("PRIVATE+KEY+" + name + "+" + hash + "+" +
		base64.StdEncoding.EncodeToString(append([]byte{cosignatureType}, key.Seed()...)))
	if err != nil {
		return nil, fmt.Errorf("cosignature key %s: %w", vkey, err)
	}
	return &CosignatureSigner{Signer: s, vkey: vkey}, nil
}

// VerifierKey is the signer's verifier key, which logs and observers trust.
func (s *CosignatureSigner) VerifierKey() string { return s.vkey }

// NewCosignatureVerifier parses a cosignature/v1 verifier key and returns
// formats' verifier of it. formats also takes an Ed25519 note key (type
// 0x01) or an ML-DSA key as a cosigner's, and never checks the key hash a key
// names; a witness is named by its Ed25519 cosignature/v1 key (type 0x04),
// so any other key, or a hash that is not the key's, is refused here.
func NewCosignatureVerifier(vkey string) (note.Verifier, error) {
	v, err := tdnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		return nil, fmt.Errorf("verifier key %q: %w", vkey, err)
	}
	name, rest, _ := strings.Cut(vkey, "+")
	_, keyB64, _ := strings.Cut(rest, "+")
	raw, err := base64.StdEncoding.DecodeString(keyB64)
	switch {
	case err != nil || len(raw) != 1+ed25519.PublicKeySize:
		return nil, fmt.Errorf("verifier key %q is not an Ed25519 key", vkey)
	case raw[0] != cosignatureType:
		return nil, fmt.Errorf("verifier key %q has key type 0x%02x, not 0x04 (an Ed25519 cosignature/v1 key)", vkey, raw[0])
	case CosignatureVerifierKey(name, raw[1:]) != vkey:
		return nil, fmt.Errorf("verifier key %q: the key hash does not match the key", vkey)
	}
	return v, nil
}

// CosignatureWindow is how far from the node's clock, either way, a
// witness's cosignature may be dated for the node, as a log, to keep it. A
// witness signs as it answers, so its time is the node's within the skew of
// two clocks. One dated at 0, or years ahead, attests no moment at all, and
// observers that check a cosignature's age (transparency check --max-age)
// refuse it. An hour tolerates a badly set clock and still leaves such a
// cosignature fresh for those observers.
const CosignatureWindow = time.Hour

// checkCosignatureTime refuses the time of sig (the timestamp and the Ed25519
// signature of a cosignature/v1, as a verifier accepted it) when it is
// further than CosignatureWindow from now.
func checkCosignatureTime(sig []byte, now time.Time) error {
	t := binary.BigEndian.Uint64(sig)
	n, w := now.Unix(), int64(CosignatureWindow/time.Second)
	if t <= math.MaxInt64 && int64(t) >= n-w && int64(t) <= n+w {
		return nil
	}
	dated := fmt.Sprintf("time %d", t)
	if t < 1<<37 { // before the year 6000: a readable date
		dated = time.Unix(int64(t), 0).UTC().Format(time.RFC3339)
	}
	return fmt.Errorf("%w: the witness dated its cosignature %s, more than %v from this node's clock (%s)",
		ErrCosignatureTime, dated, CosignatureWindow, now.UTC().Format(time.RFC3339))
}

// CosignatureTime is the time a cosignature line's signature was made, read
// by formats from its base64 (key hash, timestamp, signature). It does not
// verify the signature; open the note with the cosigner's verifier first.
func CosignatureTime(sig note.Signature) (time.Time, error) {
	t, err := tdnote.CoSigV1Timestamp(sig)
	if err != nil {
		return time.Time{}, fmt.Errorf("not a cosignature/v1 signature: %w", err)
	}
	// A timestamp past 2^62 (negative, once formats reads it as a signed
	// number, from 2^63) dates nothing.
	if t.Unix() < 0 || t.Unix() > 1<<62 {
		return time.Time{}, errors.New("cosignature time out of range")
	}
	return t.UTC(), nil
}
