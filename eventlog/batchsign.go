package eventlog

import (
	"crypto/ed25519"
	"crypto/sha512"
	"fmt"
	"hash"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// batchSigner makes Ed25519 signatures with one key, byte for byte those
// crypto/ed25519.Sign makes (RFC 8032: the signature is deterministic, so
// there is only one), several messages at a time.
//
// Why not ed25519.Sign: a signature's R is a point that must be encoded in
// affine form, and each encoding inverts a field element, about a third of a
// signature's cost. Signing a batch inverts all of their Z coordinates with
// one inversion and three multiplications a point (Montgomery's trick):
// BenchmarkBatchSign times it against ed25519.Sign, and BenchmarkAppend and
// http's BenchmarkHTTPCreateMission separate it from the noise on the write
// path (docs/benchmarks.md, "The event log"). The rest is the standard library's own arithmetic: filippo.io/edwards25519
// is crypto/internal/fips140/edwards25519 published by its author, constant
// time like it. TestBatchSignIsEd25519Sign and FuzzBatchSign hold every
// signature equal to ed25519.Sign's.
type batchSigner struct {
	s      edwards25519.Scalar // the secret scalar: SHA-512(seed)[:32], clamped
	prefix [32]byte            // SHA-512(seed)[32:], which makes r deterministic
	pub    [ed25519.PublicKeySize]byte
	h      hash.Hash // SHA-512, reset for each use
	sum    [sha512.Size]byte

	// Scratch, one entry a message of the batch; a batchSigner is used by
	// one goroutine at a time.
	r       []edwards25519.Scalar
	x, y, z []field.Element
	acc     []field.Element // acc[i] = z[0]·…·z[i]
}

// newBatchSigner panics on a key of the wrong size, as ed25519.Sign does: it
// cannot happen, since Open refuses such a key and a log without one takes
// no appends, so no job reaches a signing worker.
func newBatchSigner(key ed25519.PrivateKey) *batchSigner {
	if len(key) != ed25519.PrivateKeySize {
		panic(fmt.Sprintf("eventlog: Ed25519 private key of %d bytes", len(key)))
	}
	h := sha512.Sum512(key.Seed())
	b := &batchSigner{h: sha512.New()}
	if _, err := b.s.SetBytesWithClamping(h[:32]); err != nil {
		panic(err) // cannot fail: it fails only on an input that is not 32 bytes
	}
	copy(b.prefix[:], h[32:])
	copy(b.pub[:], key[ed25519.SeedSize:])
	return b
}

// sign puts the signature of msgs[i] in sigs[i] for every i.
func (b *batchSigner) sign(msgs [][]byte, sigs [][ed25519.SignatureSize]byte) {
	n := len(msgs)
	if n == 0 {
		return
	}
	b.grow(n)
	var R edwards25519.Point
	for i, m := range msgs {
		// r = SHA-512(prefix ‖ M) mod ℓ; R = r·B, kept projective.
		b.hashToScalar(&b.r[i], b.prefix[:], m, nil)
		R.ScalarBaseMult(&b.r[i])
		X, Y, Z, _ := R.ExtendedCoordinates()
		b.x[i].Set(X)
		b.y[i].Set(Y)
		b.z[i].Set(Z)
	}
	// One inversion for every Z: acc[i] is the product of z[0..i]; walking
	// back, inv is 1/acc[i] and inv·acc[i-1] is 1/z[i].
	b.acc[0].Set(&b.z[0])
	for i := 1; i < n; i++ {
		b.acc[i].Multiply(&b.acc[i-1], &b.z[i])
	}
	var inv, zInv, x, y field.Element
	inv.Invert(&b.acc[n-1])
	var k, S edwards25519.Scalar
	for i := n - 1; i >= 0; i-- {
		if i > 0 {
			zInv.Multiply(&inv, &b.acc[i-1])
			inv.Multiply(&inv, &b.z[i])
		} else {
			zInv.Set(&inv)
		}
		// R's encoding: y = Y/Z, with the sign of x = X/Z in the top bit.
		x.Multiply(&b.x[i], &zInv)
		y.Multiply(&b.y[i], &zInv)
		sig := &sigs[i]
		copy(sig[:32], y.Bytes())
		sig[31] |= byte(x.IsNegative() << 7)
		// k = SHA-512(R ‖ A ‖ M) mod ℓ; S = k·s + r.
		b.hashToScalar(&k, sig[:32], b.pub[:], msgs[i])
		S.MultiplyAdd(&k, &b.s, &b.r[i])
		copy(sig[32:], S.Bytes())
	}
}

// hashToScalar sets dst to SHA-512(p1 ‖ p2 ‖ p3) mod ℓ.
func (b *batchSigner) hashToScalar(dst *edwards25519.Scalar, p1, p2, p3 []byte) {
	b.h.Reset()
	b.h.Write(p1)
	b.h.Write(p2)
	b.h.Write(p3)
	if _, err := dst.SetUniformBytes(b.h.Sum(b.sum[:0])); err != nil {
		panic(err) // cannot fail: it fails only on an input that is not the 64 bytes SHA-512 gives
	}
}

func (b *batchSigner) grow(n int) {
	if len(b.r) >= n {
		return
	}
	b.r = make([]edwards25519.Scalar, n)
	b.x, b.y, b.z, b.acc = make([]field.Element, n), make([]field.Element, n), make([]field.Element, n), make([]field.Element, n)
}
