package witness

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// cosignatureType is the signed-note key type of an Ed25519 cosignature/v1
// key (C2SP tlog-cosignature).
const cosignatureType = 0x04

// cosignatureSize is the signature after the key hash: the timestamp and the
// Ed25519 signature.
const cosignatureSize = 8 + ed25519.SignatureSize

// CosignatureVerifierKey is the note verifier key of a cosignature/v1 key:
// <name>+<8 hex key hash>+<base64(0x04 ‖ public key)>.
func CosignatureVerifierKey(name string, pub ed25519.PublicKey) string {
	return fmt.Sprintf("%s+%08x+%s", name, keyHash(name, pub), base64.StdEncoding.EncodeToString(append([]byte{cosignatureType}, pub...)))
}

func keyHash(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write([]byte{cosignatureType})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosignedMessage is what a cosignature/v1 signs: the header lines and the
// checkpoint body.
func cosignedMessage(t uint64, body []byte) []byte {
	msg := make([]byte, 0, 40+len(body))
	msg = append(msg, "cosignature/v1\ntime "...)
	msg = strconv.AppendUint(msg, t, 10)
	msg = append(msg, '\n')
	return append(msg, body...)
}

// CosignatureSigner signs cosignature/v1 lines with an Ed25519 key; it is a
// note.Signer that stamps each signature with the time of its clock.
type CosignatureSigner struct {
	name string
	hash uint32
	key  ed25519.PrivateKey
	now  func() time.Time
}

// NewCosignatureSigner makes the signer named name; now nil is time.Now.
func NewCosignatureSigner(name string, key ed25519.PrivateKey, now func() time.Time) (*CosignatureSigner, error) {
	if !validKeyName(name) {
		return nil, fmt.Errorf("cosignature key name %q is not a note key name", name)
	}
	if now == nil {
		now = time.Now
	}
	pub := key.Public().(ed25519.PublicKey)
	return &CosignatureSigner{name: name, hash: keyHash(name, pub), key: key, now: now}, nil
}

func (s *CosignatureSigner) Name() string    { return s.name }
func (s *CosignatureSigner) KeyHash() uint32 { return s.hash }

// VerifierKey is the signer's verifier key, which logs and observers trust.
func (s *CosignatureSigner) VerifierKey() string {
	return CosignatureVerifierKey(s.name, s.key.Public().(ed25519.PublicKey))
}

// Sign signs msg, a checkpoint body, at the current time (whole seconds).
func (s *CosignatureSigner) Sign(msg []byte) ([]byte, error) {
	t := uint64(s.now().Unix())
	sig := make([]byte, 8, cosignatureSize)
	binary.BigEndian.PutUint64(sig, t)
	return append(sig, ed25519.Sign(s.key, cosignedMessage(t, msg))...), nil
}

// CosignatureVerifier verifies cosignature/v1 lines of one key; it is a
// note.Verifier.
type CosignatureVerifier struct {
	vkey string
	name string
	hash uint32
	pub  ed25519.PublicKey
}

// NewCosignatureVerifier parses a cosignature/v1 verifier key (type 0x04).
func NewCosignatureVerifier(vkey string) (*CosignatureVerifier, error) {
	name, hashHex, ok := strings.Cut(vkey, "+")
	hashHex, keyB64, ok2 := strings.Cut(hashHex, "+")
	if !ok || !ok2 || !validKeyName(name) || len(hashHex) != 8 {
		return nil, fmt.Errorf("verifier key %q is not name+hash+key", vkey)
	}
	h, err := strconv.ParseUint(hashHex, 16, 32)
	if err != nil {
		return nil, fmt.Errorf("verifier key %q: the key hash is not 8 hex digits", vkey)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(keyB64)
	if err != nil || len(raw) != 1+ed25519.PublicKeySize {
		return nil, fmt.Errorf("verifier key %q is not an Ed25519 key", vkey)
	}
	if raw[0] != cosignatureType {
		return nil, fmt.Errorf("verifier key %q has key type 0x%02x, not 0x04 (an Ed25519 cosignature/v1 key)", vkey, raw[0])
	}
	pub := ed25519.PublicKey(raw[1:])
	if uint32(h) != keyHash(name, pub) {
		return nil, fmt.Errorf("verifier key %q: the key hash does not match the key", vkey)
	}
	return &CosignatureVerifier{vkey: vkey, name: name, hash: uint32(h), pub: pub}, nil
}

func (v *CosignatureVerifier) Name() string        { return v.name }
func (v *CosignatureVerifier) KeyHash() uint32     { return v.hash }
func (v *CosignatureVerifier) VerifierKey() string { return v.vkey }

// Verify checks sig (the timestamp and the Ed25519 signature) over msg, a
// checkpoint body.
func (v *CosignatureVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig)
	return ed25519.Verify(v.pub, cosignedMessage(t, msg), sig[8:])
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
// signature of a cosignature/v1) when it is further than CosignatureWindow
// from now.
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
// from its base64 (key hash, timestamp, signature). It does not verify the
// signature; open the note with the cosigner's verifier first.
func CosignatureTime(sig note.Signature) (time.Time, error) {
	raw, err := base64.StdEncoding.DecodeString(sig.Base64)
	if err != nil || len(raw) != 4+cosignatureSize {
		return time.Time{}, errors.New("not a cosignature/v1 signature")
	}
	t := binary.BigEndian.Uint64(raw[4:])
	if t > 1<<62 {
		return time.Time{}, errors.New("cosignature time out of range")
	}
	return time.Unix(int64(t), 0).UTC(), nil
}

// validKeyName is note's rule: non-empty, no space, no plus.
func validKeyName(name string) bool {
	return name != "" && !strings.ContainsAny(name, " +\n\t\r") && strings.ToValidUTF8(name, "") == name
}
