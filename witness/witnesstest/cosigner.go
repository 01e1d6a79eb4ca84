package witnesstest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"
)

// cosignatureType is the signed-note key type of an Ed25519 cosignature/v1
// key.
const cosignatureType = 0x04

// DatedCosigner is a note.Signer of cosignature/v1 signatures by an Ed25519
// key, each dated by its clock.
type DatedCosigner struct {
	name string
	key  ed25519.PrivateKey
	now  func() time.Time
}

// NewDatedCosigner is the cosigner of key under name whose clock is now.
func NewDatedCosigner(name string, key ed25519.PrivateKey, now func() time.Time) *DatedCosigner {
	return &DatedCosigner{name: name, key: key, now: now}
}

func (s *DatedCosigner) Name() string { return s.name }

// KeyHash is the first four bytes of SHA-256(name ‖ "\n" ‖ 0x04 ‖ public
// key), big-endian.
func (s *DatedCosigner) KeyHash() uint32 {
	h := sha256.New()
	h.Write([]byte(s.name + "\n"))
	h.Write([]byte{cosignatureType})
	h.Write(s.key.Public().(ed25519.PublicKey))
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// Sign signs msg, a checkpoint body, at the clock's time t in whole seconds:
// t as a big-endian uint64, then the Ed25519 signature of
// "cosignature/v1\ntime <t>\n" ‖ msg.
func (s *DatedCosigner) Sign(msg []byte) ([]byte, error) {
	t := uint64(s.now().Unix())
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(t, 10)+"\n"), msg...)
	return append(binary.BigEndian.AppendUint64(nil, t), ed25519.Sign(s.key, signed)...), nil
}
