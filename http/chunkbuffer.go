package http

import (
	"io"
	"sync"
)

// chunkBuffer is the body of a buffered response, kept in fixed-size chunks.
// A contiguous buffer that grows by doubling holds up to twice its content,
// and a page near its byte budget would then cost 8 MiB for 4; chunks cost the
// content plus at most one chunk, and go back to a pool when the response is
// sent or abandoned.
type chunkBuffer struct {
	chunks []*[chunkSize]byte
	n      int // bytes written
}

const chunkSize = 64 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

func (b *chunkBuffer) Len() int { return b.n }

func (b *chunkBuffer) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		at := b.n % chunkSize
		if at == 0 && b.n/chunkSize == len(b.chunks) {
			b.chunks = append(b.chunks, chunkPool.Get().(*[chunkSize]byte))
		}
		c := copy(b.chunks[b.n/chunkSize][at:], p)
		b.n += c
		p = p[c:]
	}
	return written, nil
}

// WriteTo writes the content to w, a chunk at a time.
func (b *chunkBuffer) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for i, c := range b.chunks {
		end := min(chunkSize, b.n-i*chunkSize)
		if end <= 0 {
			break
		}
		n, err := w.Write(c[:end])
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Reset empties the buffer and returns its chunks to the pool.
func (b *chunkBuffer) Reset() {
	for i, c := range b.chunks {
		chunkPool.Put(c)
		b.chunks[i] = nil
	}
	b.chunks, b.n = b.chunks[:0], 0
}
