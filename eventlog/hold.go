package eventlog

import (
	"context"
	"fmt"
)

// Behind is why a log holds its writes: a checkpoint of its own key that its
// chain does not cover was seen somewhere. A node that signed on from such a
// tip would sign a second event at a seq someone already holds (the fork
// guard, docs/operations.md).
type Behind struct {
	// Size is the tree size seen; Tip the log's own when it was seen.
	Size, Tip int64
	// Seen names where: the published directory or URL, a witness, the
	// stored cosignatures.
	Seen string
	// Fork is a tree of at most Tip events whose root is not the log's at
	// that size: the two histories differ, and catching up cannot mend it.
	Fork bool
	// Reason is a short code for the answer and the metric: behind,
	// forked, waiting (for the witnesses of a recovered data dir),
	// superseded (another instance was promoted).
	Reason string
}

// Message says what the hold means to a client.
func (b *Behind) Message() string {
	switch {
	case b.Fork:
		return fmt.Sprintf("%s holds a tree of %d events that this chain (%d events) does not extend; the node appends nothing", b.Seen, b.Size, b.Tip)
	case b.Size > b.Tip:
		return fmt.Sprintf("%s holds a tree of %d events, %d more than this chain's %d; the node appends nothing until it has them", b.Seen, b.Size, b.Size-b.Tip, b.Tip)
	default:
		return b.Seen + ": the node appends nothing"
	}
}

func (b *Behind) Error() string { return ErrBehindPublished.Error() + ": " + b.Message() }

// Unwrap makes errors.Is(err, ErrBehindPublished) hold.
func (b *Behind) Unwrap() error { return ErrBehindPublished }

// Hold makes every Append and Decide return b (errors.Is ErrBehindPublished)
// until Release: the fork guard's gate. Ingest still adds events signed
// elsewhere, so the log can catch up while it holds.
func (l *Log) Hold(b Behind) { l.hold.Store(&b) }

// Release lets the log append again.
func (l *Log) Release() { l.hold.Store(nil) }

// Held is the hold, nil while the log appends.
func (l *Log) Held() *Behind {
	b := l.hold.Load()
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// held is the error of a write while the log holds.
func (l *Log) held() error {
	if b := l.hold.Load(); b != nil {
		c := *b
		return &c
	}
	return nil
}

// AppendHeld appends drafts as Append does, although the log holds its
// writes: the one write the holder makes itself before it releases (a
// promoted node's node.promoted, which must come before any other).
func (l *Log) AppendHeld(ctx context.Context, drafts ...Draft) ([]Event, error) {
	if l.ReadOnly() {
		return nil, ErrReadOnly
	}
	payloads, err := canonicalDrafts(drafts)
	if err != nil {
		return nil, err
	}
	return l.submit(ctx, &request{drafts: drafts, payloads: payloads, pastHold: true})
}
