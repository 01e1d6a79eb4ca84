package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestMaxEventSize: a payload of MaxPayloadSize bytes, with the longest type
// and a seq of 20 digits' room, makes an event of at most MaxEventSize bytes
// as stored, through Append and Decide; one byte more is ErrInvalidDraft
// and appends nothing. Readers size their buffers by MaxEventSize.
func TestMaxEventSize(t *testing.T) {
	l := openMem(t, Options{})
	typ := strings.Repeat("t", 63) + "." + strings.Repeat("u", 64)
	if !ValidType(typ) || len(typ) != 128 {
		t.Fatalf("the type %q is not the longest valid one", typ)
	}
	// A payload of n bytes as stored: {"r":"…"}, its escapes counted.
	payload := func(n int) Canonical {
		c, err := Canonicalize(map[string]string{"r": strings.Repeat("\x01", (n-8)/6) + strings.Repeat("a", (n-8)%6)})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.b) != n {
			t.Fatalf("the payload is %d bytes, want %d", len(c.b), n)
		}
		return c
	}
	evs := mustAppend(t, l, Draft{Type: typ, Payload: payload(MaxPayloadSize)})
	if n := len(evs[0].Raw()); n > MaxEventSize || n < MaxPayloadSize {
		t.Fatalf("an event of the largest payload is %d bytes as stored, want at most %d", n, MaxEventSize)
	}
	evs, err := l.Decide(context.Background(), func() ([]Draft, error) {
		return []Draft{{Type: typ, Payload: payload(MaxPayloadSize)}}, nil
	})
	if err != nil || len(evs[0].Raw()) > MaxEventSize {
		t.Fatalf("Decide of the largest payload: %v", err)
	}
	tip := l.Tip().Seq
	if _, err := l.Append(context.Background(), Draft{Type: typ, Payload: payload(MaxPayloadSize + 1)}); !errors.Is(err, ErrInvalidDraft) {
		t.Fatalf("Append of a payload one byte over the bound: %v, want ErrInvalidDraft", err)
	}
	if _, err := l.Decide(context.Background(), func() ([]Draft, error) {
		return []Draft{{Type: typ, Payload: map[string]string{"r": strings.Repeat("\x01", MaxPayloadSize/6)}}}, nil
	}); !errors.Is(err, ErrInvalidDraft) {
		t.Fatalf("Decide of a payload over the bound: %v, want ErrInvalidDraft", err)
	}
	if l.Tip().Seq != tip {
		t.Fatalf("the refused drafts moved the tip from %d to %d", tip, l.Tip().Seq)
	}
}
