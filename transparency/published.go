package transparency

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// PublishedClient reads what Publish wrote at loc: a directory, through
// net/http's file transport, or the URL a static host serves it at. Mirror
// reads either through it, so a node catches up from its published tail
// exactly as a mirror follows one.
func PublishedClient(loc string) (*Client, error) {
	if isURL(loc) {
		return NewObserverClient(loc, "")
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: http.NewFileTransport(http.Dir(abs))}
	return &Client{client: hc, base: "file://", via: abs}, nil
}

// PublishedHead reads the checkpoint published at loc and opens it with the
// key of l: the tree a static copy of the chain has, and the note as
// served. A checkpoint another key signed is an error (errors.Is
// ErrAnotherKey when the note names another signer).
func PublishedHead(ctx context.Context, l *eventlog.Log, loc string) (eventlog.TreeHead, []byte, error) {
	signed, err := readPublishedCheckpoint(ctx, loc)
	if err != nil {
		return eventlog.TreeHead{}, nil, err
	}
	k, err := ParseKey(l.VerifierKey())
	if err != nil {
		return eventlog.TreeHead{}, nil, err
	}
	head, err := k.OpenCheckpoint(signed)
	if err != nil {
		return eventlog.TreeHead{}, signed, fmt.Errorf("the checkpoint at %s: %w", loc, err)
	}
	return head, signed, nil
}

// WriteEvidence keeps what was served (a checkpoint that contradicts the
// chain, say) in a new evidence file beside prefix, as Check and Mirror keep
// theirs: <prefix>.evidence-<UTC time>-<problem>.json, mode 0600, never
// replaced. It returns the file's path.
func WriteEvidence(prefix, problem string, data []byte) (string, error) {
	return writeEvidenceFile(prefix, problem, time.Now(), data)
}

func isURL(loc string) bool {
	return strings.HasPrefix(loc, "http://") || strings.HasPrefix(loc, "https://")
}

// FirstDifference names the first seq at which the chain of l and the tree
// head, published at c's source, differ: the smallest size whose roots are
// not the same, found by bisection over the source's tiles (each checked
// against head's root). 0 means they agree on every event both have.
func FirstDifference(ctx context.Context, c *Client, head eventlog.TreeHead, l *eventlog.Log) (uint64, error) {
	tiles := &cachedTiles{ctx: ctx, c: c}
	hashes := tlog.TileHashReader(tlog.Tree{N: head.Size, Hash: head.Root}, tiles)
	differs := func(k int64) (bool, error) {
		theirs, err := tlog.TreeHash(k, hashes)
		if err != nil {
			return false, err
		}
		ours, err := l.TreeRoot(k)
		if err != nil {
			return false, err
		}
		return theirs != ours, nil
	}
	n := min(head.Size, l.TreeSize())
	if n == 0 {
		return 0, nil
	}
	if d, err := differs(n); err != nil || !d {
		return 0, err
	}
	lo, hi := int64(0), n // the trees agree at lo and differ at hi
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		d, err := differs(mid)
		if err != nil {
			return 0, err
		}
		if d {
			hi = mid
		} else {
			lo = mid
		}
	}
	return uint64(hi), nil
}
