package localnode

import (
	"context"
	"errors"
	"fmt"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// CaughtUp is what CatchUp did.
type CaughtUp struct {
	// Published is the tree of the source's seal; Events how many of its
	// events the chain took.
	Published eventlog.TreeHead
	Events    uint64
	// SupersededBy is another instance a node.promoted among the events
	// taken names: a node promoted in this one's place, which this one must
	// never write beside.
	SupersededBy string
}

// CatchUp brings the node's own chain up to the tree published at loc (a
// directory or URL Publish wrote), every event verified against the node's
// key and the signed tree exactly as a mirror verifies it
// (transparency.Mirror). A published tree the chain does not extend is an
// error (errors.Is transparency.ErrForked, ErrRolledBack or ErrAnotherKey),
// its evidence kept beside dir's other evidence; a source that cannot be
// read is returned as it is (transparency.Transient tells those that may
// pass). The chain's events after its tip are read for a node.promoted of
// another instance than dir's.
func CatchUp(ctx context.Context, chain *eventlog.Log, dir datadir.Dir, loc string) (CaughtUp, error) {
	c, err := transparency.PublishedClient(loc)
	if err != nil {
		return CaughtUp{}, err
	}
	defer c.Close()
	from := chain.TreeSize()
	// A published tree the chain already holds is held to the chain's
	// root at its size, and nothing is fetched.
	head, signed, err := transparency.PublishedHead(ctx, chain, loc)
	if errors.Is(err, transparency.ErrAnotherKey) {
		path, _ := transparency.WriteEvidence(dir.EvidencePrefix(), "another_key", signed)
		return CaughtUp{}, fmt.Errorf("%w (evidence: %s)", err, path)
	}
	if err != nil {
		return CaughtUp{}, err
	}
	if head.Size <= from {
		root, err := chain.TreeRoot(head.Size)
		if err != nil {
			return CaughtUp{}, err
		}
		if root != head.Root {
			path, _ := transparency.WriteEvidence(dir.EvidencePrefix(), "forked", signed)
			err := fmt.Errorf("%w: the checkpoint at %s is of a tree of %d events with root %s; this chain's tree of that size has root %s (evidence: %s)",
				transparency.ErrForked, loc, head.Size, transparency.B64(head.Root), transparency.B64(root), path)
			if seq, derr := transparency.FirstDifference(ctx, c, head, chain); derr == nil && seq > 0 {
				err = fmt.Errorf("%w; the first event that differs is seq %d", err, seq)
			}
			return CaughtUp{Published: head}, err
		}
		return CaughtUp{Published: head}, nil
	}
	rep, err := transparency.Mirror(ctx, c, chain, transparency.MirrorOptions{URL: loc, Evidence: dir.EvidencePrefix()})
	out := CaughtUp{Published: rep.Head, Events: rep.Events}
	if errors.Is(err, transparency.ErrForked) {
		if seq, derr := transparency.FirstDifference(ctx, c, rep.Head, chain); derr == nil && seq > 0 {
			return out, fmt.Errorf("%w; the first event that differs is seq %d", err, seq)
		}
	}
	if err != nil {
		return out, err
	}
	if out.Events > 0 {
		if out.SupersededBy, err = supersededSince(chain, dir, from); err != nil {
			return out, err
		}
	}
	return out, nil
}

// supersededSince is the instance a node.promoted after seq from names, if
// it is another than dir's: a node promoted in this one's place.
func supersededSince(chain *eventlog.Log, dir datadir.Dir, from int64) (string, error) {
	instance, err := dir.InstanceID()
	if err != nil {
		return "", err
	}
	var other string
	err = chain.Scan(uint64(from)+1, uint64(chain.TreeSize()), func(ev *eventlog.Event) error {
		if o, ok := SupersededBy(*ev, instance); ok {
			other = o
		}
		return nil
	})
	return other, err
}
