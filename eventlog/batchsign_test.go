package eventlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"
)

// TestBatchSignIsEd25519Sign holds the batch signer to the standard library:
// for keys and messages of every kind and batches of every size up to past
// the signer's largest, each signature is ed25519.Sign's, byte for byte, and
// verifies.
func TestBatchSignIsEd25519Sign(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	for keyN := range 8 {
		seed := make([]byte, ed25519.SeedSize)
		if keyN > 0 { // the zero seed, then random ones
			rand.Read(seed)
		}
		key := ed25519.NewKeyFromSeed(seed)
		b := newBatchSigner(key)
		for n := 1; n <= 2*maxSignBatch+1; n++ {
			msgs := make([][]byte, n)
			for i := range msgs {
				msgs[i] = make([]byte, rng.IntN(2100)) // empty to a large event
				rand.Read(msgs[i])
			}
			if n == 3 {
				msgs[1] = msgs[0] // the same message twice in a batch
			}
			sigs := make([][ed25519.SignatureSize]byte, n)
			b.sign(msgs, sigs)
			for i, m := range msgs {
				want := ed25519.Sign(key, m)
				if !bytes.Equal(sigs[i][:], want) {
					t.Fatalf("key %d, batch of %d, message %d (%d bytes): signature %x, ed25519.Sign gives %x", keyN, n, i, len(m), sigs[i], want)
				}
				if !ed25519.Verify(key.Public().(ed25519.PublicKey), m, sigs[i][:]) {
					t.Fatalf("key %d, batch of %d, message %d: the signature does not verify", keyN, n, i)
				}
			}
		}
	}
}

// FuzzBatchSign signs a batch of messages cut from the input with a key from
// the input and holds each signature to ed25519.Sign's.
func FuzzBatchSign(f *testing.F) {
	f.Add(make([]byte, 32), []byte(`{"node_did":"did:key:z6Mk","payload":{}}`), uint8(1))
	f.Add(bytes.Repeat([]byte{0xff}, 32), bytes.Repeat([]byte("event"), 300), uint8(7))
	f.Fuzz(func(t *testing.T, seed, data []byte, cuts uint8) {
		if len(seed) != ed25519.SeedSize {
			return // not a seed: ed25519.NewKeyFromSeed refuses it too
		}
		key := ed25519.NewKeyFromSeed(seed)
		n := int(cuts)%maxSignBatch + 1
		msgs := make([][]byte, n)
		for i := range msgs { // n consecutive pieces of data, the last one what is left
			lo, hi := i*len(data)/n, (i+1)*len(data)/n
			msgs[i] = data[lo:hi]
		}
		sigs := make([][ed25519.SignatureSize]byte, n)
		newBatchSigner(key).sign(msgs, sigs)
		for i, m := range msgs {
			if want := ed25519.Sign(key, m); !bytes.Equal(sigs[i][:], want) {
				t.Fatalf("message %d of %d (%q): signature %x, ed25519.Sign gives %x", i, n, m, sigs[i], want)
			}
		}
	})
}

// BenchmarkBatchSign compares a signature made in a batch of n by the batch
// signer with one made alone by ed25519.Sign, over an event-sized message.
// Each iteration signs n messages both ways in turn, so that a machine whose
// speed drifts during the run slows both alike: x_ed25519 is the batch's
// time a signature over ed25519.Sign's.
func BenchmarkBatchSign(b *testing.B) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	msg := bytes.Repeat([]byte("e"), 1000)
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			s := newBatchSigner(key)
			msgs := make([][]byte, n)
			for i := range msgs {
				msgs[i] = msg
			}
			sigs := make([][ed25519.SignatureSize]byte, n)
			var alone, batched time.Duration
			for b.Loop() {
				t0 := time.Now()
				for range n {
					ed25519.Sign(key, msg)
				}
				t1 := time.Now()
				s.sign(msgs, sigs)
				batched += time.Since(t1)
				alone += t1.Sub(t0)
			}
			sigsMade := float64(b.N * n)
			b.ReportMetric(float64(alone.Nanoseconds())/sigsMade, "ed25519_ns/sig")
			b.ReportMetric(float64(batched.Nanoseconds())/sigsMade, "batch_ns/sig")
			b.ReportMetric(float64(batched)/float64(alone), "x_ed25519")
		})
	}
}
