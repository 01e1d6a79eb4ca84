package transparency

import (
	"bytes"
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// sealAtSource is a Source that can seal a tree older than its tip: the
// log of the node's own data dir. A node's API seals its tip only.
type sealAtSource interface {
	SealAt(ctx context.Context, size int64) (eventlog.Seal, error)
}

func (s logSource) SealAt(_ context.Context, size int64) (eventlog.Seal, error) {
	return s.l.SealAt(size)
}

// publishWitnessed is the end of a PublishTo with WitnessedOnly, once the
// tiles and bundles of the node's tree (p.Tiles, of which tipSeal is the
// seal) are durable in t: it writes the checkpoint and the seal of the
// node's newest witnessed tree, if it is newer than the one published (or
// the same one with other cosignatures), else nothing. That tree may be
// below the tiles' one: its own partial tiles and bundle are written first,
// so that its checkpoint can be read and proved from t as it stands.
func publishWitnessed(ctx context.Context, src Source, t Target, k Key, tipSeal eventlog.Seal, p Published) (Published, error) {
	old, tip := p.Old, p.Tiles
	p.Head = old
	p.Waiting = tip.Size > old.Size
	w, err := src.Witnessed(ctx)
	if err != nil {
		return Published{}, fmt.Errorf("read the node's witnessed checkpoint: %w", err)
	}
	if w == nil {
		return p, nil
	}
	wh, err := k.OpenCheckpoint(w)
	if err != nil {
		return Published{}, fmt.Errorf("the node's witnessed checkpoint: %w", err)
	}
	// Older than the published one (its state file was lost), or newer
	// than the tree this run read (cosigned since): nothing now.
	if wh.Size == 0 || wh.Size < old.Size || wh.Size > tip.Size {
		return p, nil
	}
	if wh.Size == tip.Size {
		if wh.Root != tip.Root {
			return Published{}, fmt.Errorf("the node's witnessed checkpoint of %d events has root %s, its tree %s: %w",
				wh.Size, B64(wh.Root), B64(tip.Root), ErrForked)
		}
	} else {
		proof, err := src.Consistency(ctx, wh.Size, tip.Size)
		if err != nil {
			return Published{}, fmt.Errorf("prove the node's tree consistent with its witnessed checkpoint: %w", err)
		}
		if err := tlog.CheckTree(proof, tip.Size, tip.Root, wh.Size, wh.Root); err != nil {
			return Published{}, fmt.Errorf("the node's tree of %d events does not extend its witnessed tree of %d: %w (%w)", tip.Size, wh.Size, ErrForked, err)
		}
	}
	p.Waiting = tip.Size > wh.Size
	if wh.Size == old.Size {
		// The same tree: written again only with other cosignatures.
		cur, err := t.Read(ctx, CheckpointFile)
		if err != nil {
			return Published{}, fmt.Errorf("read the published checkpoint: %w", err)
		}
		p.Witnessed = true
		if bytes.Equal(cur, w) {
			return p, nil
		}
		if _, err := t.Put(ctx, CheckpointFile, w); err != nil {
			return Published{}, err
		}
		p.CheckpointWritten = true
		return p, t.Sync(ctx)
	}

	seal := tipSeal
	if wh.Size != tip.Size {
		sa, ok := src.(sealAtSource)
		if !ok {
			// A node's API seals its tip only: the witnessed tree waits
			// for a run that finds the tip witnessed.
			return p, nil
		}
		if seal, err = sa.SealAt(ctx, wh.Size); err != nil {
			return Published{}, fmt.Errorf("the node's seal of its witnessed tree of %d events: %w", wh.Size, err)
		}
	}
	sh, err := eventlog.VerifySeal(seal, k.DID, k.pub)
	if err != nil {
		return Published{}, fmt.Errorf("the node's own seal: %w", err)
	}
	if sh != wh {
		return Published{}, fmt.Errorf("the node's seal is of %d events, its witnessed checkpoint of %d", sh.Size, wh.Size)
	}
	// The witnessed tree's own partial tiles and bundle: its full ones
	// are among the tiles' tree's, published.
	for _, tile := range tlog.NewTiles(TileHeight, old.Size, wh.Size) {
		if tile.W == 1<<TileHeight {
			continue
		}
		if _, err := publishTile(ctx, src, tile, t); err != nil {
			return Published{}, err
		}
	}
	if r := wh.Size % BundleSize; r != 0 {
		if _, err := publishBundle(ctx, src, wh.Size/BundleSize, int(r), t); err != nil {
			return Published{}, err
		}
	}
	if err := t.Sync(ctx); err != nil {
		return Published{}, fmt.Errorf("sync the tiles: %w", err)
	}
	if err := putSeal(ctx, t, seal); err != nil {
		return Published{}, err
	}
	if _, err := t.Put(ctx, CheckpointFile, w); err != nil {
		return Published{}, err
	}
	if err := t.Sync(ctx); err != nil {
		return Published{}, err
	}
	p.Head, p.Witnessed, p.CheckpointWritten = wh, true, true
	return p, nil
}
