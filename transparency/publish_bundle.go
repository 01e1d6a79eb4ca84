package transparency

import (
	"bytes"
	"context"
	"fmt"
)

// bundleSource is a Source that writes the stored bytes of events straight
// into a bundle, without decoding them: the log of the node's own data dir,
// which a node publishing continuously reads every interval.
type bundleSource interface {
	appendBundle(ctx context.Context, buf *bytes.Buffer, seq uint64, n int) error
}

func (s logSource) appendBundle(ctx context.Context, buf *bytes.Buffer, seq uint64, n int) error {
	want := seq
	err := s.l.ScanRaw(ctx, seq, seq+uint64(n)-1, func(got uint64, raw []byte) error {
		if got != want {
			return fmt.Errorf("event %d is missing from %s", want, s.dir)
		}
		want++
		buf.Write(raw)
		buf.WriteByte('\n')
		return nil
	})
	if err == nil && want != seq+uint64(n) {
		err = fmt.Errorf("read events %d..%d from %s: %d of them", seq, seq+uint64(n)-1, s.dir, want-seq)
	}
	return err
}

// bundleBytes is the event bundle of the n events from seq: each as
// stored, one a line.
func bundleBytes(ctx context.Context, src Source, seq uint64, n int) ([]byte, error) {
	var buf bytes.Buffer
	if bs, ok := src.(bundleSource); ok {
		if err := bs.appendBundle(ctx, &buf, seq, n); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
	evs, err := src.Events(ctx, seq, n)
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		buf.Write(ev)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}
