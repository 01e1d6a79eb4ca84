package http

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestChunkBuffer: writes of every size, across chunk boundaries, come back in
// order and whole; Reset empties the buffer for reuse.
func TestChunkBuffer(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 3 {
		var b chunkBuffer
		var want bytes.Buffer
		for want.Len() < 3*chunkSize+round*777 {
			p := make([]byte, r.IntN(chunkSize/3)+r.IntN(3)*chunkSize/2)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			if n, err := b.Write(p); n != len(p) || err != nil {
				t.Fatalf("write %d: %d, %v", len(p), n, err)
			}
			want.Write(p)
		}
		var got bytes.Buffer
		if n, err := b.WriteTo(&got); err != nil || n != int64(want.Len()) || b.Len() != want.Len() {
			t.Fatalf("WriteTo: %d of %d bytes (Len %d), %v", n, want.Len(), b.Len(), err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatal("content differs")
		}
		b.Reset()
		if b.Len() != 0 || len(b.chunks) != 0 {
			t.Fatalf("after Reset: Len %d, %d chunks", b.Len(), len(b.chunks))
		}
	}
}
