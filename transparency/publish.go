package transparency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// The files of a publish directory besides the tiles. checkpoint and tile/
// are what C2SP tlog-tiles specifies; verifier-key is a convenience for an
// observer's first visit (it is no trust anchor: whoever can replace the
// checkpoint can replace it too); the dot files are Publish's own and need
// not be served.
//
// seal and events/ are civnode's, for mirrors (docs/mirrors.md): seal is the
// node's eventlog.Seal, as JSON, of the tree of the checkpoint (or of a newer
// one, while a run is between the two), so that a mirror's export carries the
// node's own signatures; events/ holds the event bundles (BundlePath).
const (
	CheckpointFile  = "checkpoint"
	SealFile        = "seal"
	VerifierKeyFile = "verifier-key"
	LockFile        = ".publish.lock"
	TmpDir          = ".tmp"
)

// PublishOptions are the hooks through which Publish reports while it runs.
// Either may be nil.
type PublishOptions struct {
	// Repaired is called with the path of each published tile that did not
	// match the node's tree and was written again, before the new tiles.
	Repaired func(path string)
	// Progress is called once with the number of new tiles; step is then
	// called with the number written so far, and done when they are all
	// written or Publish fails.
	Progress func(total int) (step func(int), done func())
	// Done is the size of a tree of the node's chain whose tiles and
	// bundles this process already published to the target (Published.Tiles
	// of its last run), so they are neither checked nor written again; 0:
	// none.
	Done int64
	// WitnessedOnly writes the checkpoint and the seal only of a tree the
	// node's witnesses cosigned (Source.Witnessed), the newest one, which
	// may be below the tiles' tree: a mirror that requires witnesses then
	// never meets an unwitnessed checkpoint. Set it when the node has
	// witnesses.
	WitnessedOnly bool
}

// Published is what one Publish did.
type Published struct {
	Origin    string            // the node's key name, the checkpoint's origin
	Old, Head eventlog.TreeHead // the tree published before, and now
	Written   int               // new tiles written
	Kept      int               // new tiles already there from a run cut short
	Repaired  int               // published tiles written again
	// Witnessed: the published checkpoint is the node's witnessed one, with
	// its witnesses' cosignatures. CheckpointWritten: this run wrote it.
	Witnessed, CheckpointWritten bool
	Bundles                      int // event bundles written
	// Tiles is the tree whose tiles and bundles are published: Head, or,
	// with WitnessedOnly, the node's tree while Head is its newest witnessed
	// one. Waiting: with WitnessedOnly, the node's tree is not witnessed
	// yet, so the checkpoint is of an older one (Head).
	Tiles   eventlog.TreeHead
	Waiting bool
}

// BundleSize is the number of events in a full event bundle: one bundle for
// each level-0 tile, the same leaves.
const BundleSize = 1 << TileHeight

// BundlePath is the path of the event bundle of leaves BundleSize·n … +w−1
// (seqs one more) under a publish directory: events/<N>[.p/<W>] with N in the
// index scheme of tiles, e.g. events/x001/234; w is BundleSize for a full one.
// A bundle is those events as stored, one a line, each line ending in \n.
func BundlePath(n int64, w int) string {
	return "events/" + strings.TrimPrefix(tlog.Tile{H: TileHeight, L: 0, N: n, W: w}.Path(), "tile/8/0/")
}

// Publish writes the node's tree, read from src, to the directory dir
// (PublishTo with DirTarget): see PublishTo.
func Publish(ctx context.Context, src Source, dir string, opts PublishOptions) (Published, error) {
	return PublishTo(ctx, src, DirTarget(dir), opts)
}

// PublishTo writes the node's tree, read from src, to t in the C2SP
// tlog-tiles layout. It is incremental: it reads t's checkpoint, checks it
// with the node's key and proves the node's tree consistent with it, then
// writes only the tiles that are new since that tree, and the new checkpoint
// last. Every tile and bundle is durable (Target.Sync) before the seal and
// the checkpoint are written: a reader never sees a checkpoint whose tiles
// are missing, and a run cut short is simply run again. Each run also checks
// every tile already published (unless opts.Done covers it) and writes again
// any that was changed or lost. It refuses to publish over a checkpoint
// signed by another key, of a larger tree, or of a tree the node's does not
// extend (errors.Is ErrPublishRefused). One run at a time holds t
// (Target.Lock).
func PublishTo(ctx context.Context, src Source, t Target, opts PublishOptions) (Published, error) {
	unlock, err := t.Lock(ctx)
	if err != nil {
		return Published{}, err
	}
	defer unlock()

	vkey, signed, err := src.Head(ctx)
	if err != nil {
		return Published{}, err
	}
	k, err := ParseKey(vkey)
	if err != nil {
		return Published{}, fmt.Errorf("the node's %w", err)
	}
	if _, err := k.OpenCheckpoint(signed); err != nil {
		return Published{}, fmt.Errorf("the node's own checkpoint: %w", err)
	}
	// The seal's checkpoint is the one published: the seal and the events
	// bundled are then of one tree.
	seal, err := src.Seal(ctx)
	if err != nil {
		return Published{}, fmt.Errorf("the node's seal from %s: %w", src.Via(), err)
	}
	head, err := eventlog.VerifySeal(seal, k.DID, k.pub)
	if err != nil {
		return Published{}, fmt.Errorf("the node's own seal: %w", err)
	}
	signed = []byte(seal.Checkpoint)
	old, err := publishedHead(ctx, t, k, src, head)
	if err != nil {
		return Published{}, err
	}
	// An observer of the published log may require cosignatures
	// (transparency check --witness): the node's witnessed checkpoint is
	// written instead when it covers the published size.
	witnessed, err := witnessedAt(ctx, src, k, head)
	if err != nil {
		return Published{}, err
	}
	if witnessed != nil {
		signed = witnessed
	}

	// The new checkpoint vouches for the old tree's tiles too: any that was
	// changed or lost since it was written is written again first. Tiles
	// this process wrote or checked (opts.Done) are not read again.
	var repaired []string
	if old.Size > opts.Done || opts.Done > head.Size {
		if repaired, err = verifyPublishedTiles(ctx, src, old.Size, t); err != nil {
			return Published{}, err
		}
	}
	if opts.Repaired != nil {
		for _, rel := range repaired {
			opts.Repaired(t.Where(rel))
		}
	}

	from := old.Size
	if opts.Done > from && opts.Done <= head.Size {
		from = opts.Done
	}
	tiles := tlog.NewTiles(TileHeight, from, head.Size)
	written, kept := 0, 0
	step, done := func(int) {}, func() {}
	if opts.Progress != nil {
		step, done = opts.Progress(len(tiles))
	}
	for i, tile := range tiles {
		w, err := publishTile(ctx, src, tile, t)
		if err != nil {
			done()
			return Published{}, err
		}
		if w {
			written++
		} else {
			kept++
		}
		step(i + 1)
	}
	done()
	bundles, err := publishBundles(ctx, src, from, head.Size, t)
	if err != nil {
		return Published{}, err
	}
	if _, err := t.Put(ctx, VerifierKeyFile, []byte(vkey+"\n")); err != nil {
		return Published{}, err
	}
	p := Published{Origin: k.Origin, Old: old, Head: head, Tiles: head, Written: written, Kept: kept, Repaired: len(repaired), Bundles: bundles}
	// Every tile the checkpoint needs is durable before the checkpoint is.
	if err := t.Sync(ctx); err != nil {
		return Published{}, fmt.Errorf("sync the tiles: %w", err)
	}
	if opts.WitnessedOnly {
		return publishWitnessed(ctx, src, t, k, seal, p)
	}
	sealWritten := false
	if cur, err := t.Read(ctx, SealFile); err != nil {
		return Published{}, err
	} else if old.Size != head.Size || cur == nil {
		sealWritten = true
		if err := putSeal(ctx, t, seal); err != nil {
			return Published{}, err
		}
	}
	// The same tree gets its checkpoint again when it has since been
	// witnessed; a witnessed one is never replaced by a plain one.
	rewrite := old.Size != head.Size
	if !rewrite && witnessed != nil {
		cur, err := t.Read(ctx, CheckpointFile)
		if err != nil {
			return Published{}, fmt.Errorf("read the published checkpoint: %w", err)
		}
		rewrite = !bytes.Equal(cur, witnessed)
	}
	if rewrite {
		if _, err := t.Put(ctx, CheckpointFile, signed); err != nil {
			return Published{}, err
		}
	}
	if rewrite || sealWritten {
		if err := t.Sync(ctx); err != nil {
			return Published{}, err
		}
	}
	p.Witnessed, p.CheckpointWritten = witnessed != nil, rewrite
	return p, nil
}

// putSeal writes the seal, as JSON, one line.
func putSeal(ctx context.Context, t Target, seal eventlog.Seal) error {
	b, err := json.Marshal(seal)
	if err != nil {
		return err
	}
	_, err = t.Put(ctx, SealFile, append(b, '\n'))
	return err
}

// publishBundles writes the event bundles of the leaves from..size−1: the
// one holding leaf from (partial before, perhaps) up to the partial one at
// size. It returns how many it wrote.
func publishBundles(ctx context.Context, src Source, from, size int64, t Target) (int, error) {
	n := 0
	for b := from / BundleSize; b*BundleSize < size; b++ {
		w, err := publishBundle(ctx, src, b, int(min(BundleSize, size-b*BundleSize)), t)
		if err != nil {
			return n, err
		}
		if w {
			n++
		}
	}
	return n, nil
}

// witnessedAt is the node's witnessed checkpoint when it is of the tree of
// head (same size, same root, signed by k), else nil: a witnessed checkpoint
// of an older tree would publish less than the tiles hold, and one that does
// not verify is not written anywhere.
func witnessedAt(ctx context.Context, src Source, k Key, head eventlog.TreeHead) ([]byte, error) {
	w, err := src.Witnessed(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the node's witnessed checkpoint: %w", err)
	}
	if w == nil {
		return nil, nil
	}
	wh, err := k.OpenCheckpoint(w)
	if err != nil {
		return nil, fmt.Errorf("the node's witnessed checkpoint: %w", err)
	}
	if wh.Size != head.Size || wh.Root != head.Root {
		return nil, nil
	}
	return w, nil
}

// verifyPublishedTiles checks every tile of the tree of size n already
// published in dir and writes again, from src, each one that is missing or
// does not match; it returns their paths. Tiles are checked from the top
// level down: a partial tile against src (there are at most one a level), a
// full tile against the hash its parent, checked before it, holds for it. So
// a run reads every published tile and hashes it, but asks src only for the
// partial tiles and the ones to repair.
func verifyPublishedTiles(ctx context.Context, src Source, n int64, t Target) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	tiles := tlog.NewTiles(TileHeight, 0, n)
	slices.SortStableFunc(tiles, func(a, b tlog.Tile) int { return b.L - a.L })
	var repaired []string
	for _, tile := range tiles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if tile.W == 1<<TileHeight {
			ok, err := fullTileMatches(ctx, tile, n, t)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
		w, err := publishTile(ctx, src, tile, t)
		if err != nil {
			return nil, err
		}
		if w {
			repaired = append(repaired, TilePath(tile))
		}
	}
	return repaired, nil
}

// fullTileMatches reports whether the full tile t of a tree of size n, as
// published in target, hashes to the entry its parent tile there holds for
// it. A missing or short file does not match.
func fullTileMatches(ctx context.Context, t tlog.Tile, n int64, target Target) (bool, error) {
	data, err := readTileFile(ctx, target, t)
	if err != nil || len(data) != t.W*tlog.HashSize {
		return false, err
	}
	hs := make([]tlog.Hash, t.W)
	for i := range hs {
		copy(hs[i][:], data[i*tlog.HashSize:])
	}
	for len(hs) > 1 {
		for i := range len(hs) / 2 {
			hs[i] = tlog.NodeHash(hs[2*i], hs[2*i+1])
		}
		hs = hs[:len(hs)/2]
	}
	// The parent's width in the tree of size n: the hashes at its level.
	above := n >> (uint(t.L+1) * TileHeight)
	parent := tlog.Tile{H: TileHeight, L: t.L + 1, N: t.N >> TileHeight}
	parent.W = int(min(above-parent.N<<TileHeight, 1<<TileHeight))
	pdata, err := readTileFile(ctx, target, parent)
	if err != nil {
		return false, err
	}
	i := int(t.N%(1<<TileHeight)) * tlog.HashSize
	if len(pdata) != parent.W*tlog.HashSize || i+tlog.HashSize > len(pdata) {
		return false, nil // the parent is repaired first; a damaged one fails its own check
	}
	return bytes.Equal(pdata[i:i+tlog.HashSize], hs[0][:]), nil
}

// readTileFile reads tile t in target, nil when it is missing.
func readTileFile(ctx context.Context, target Target, t tlog.Tile) ([]byte, error) {
	b, err := target.Read(ctx, TilePath(t))
	if err != nil {
		return nil, fmt.Errorf("verify the published tiles: %w", err)
	}
	return b, nil
}

// publishedHead reads the checkpoint already in t, if any, and requires
// that the node's tree extends it: the same key, a tree at least as large,
// and a consistency proof from it. It returns the empty tree when t has no
// checkpoint. Every refusal is ErrPublishRefused.
func publishedHead(ctx context.Context, t Target, k Key, src Source, head eventlog.TreeHead) (eventlog.TreeHead, error) {
	path := t.Where(CheckpointFile)
	b, err := t.Read(ctx, CheckpointFile)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("read the published checkpoint: %w", err)
	}
	if b == nil {
		return eventlog.TreeHead{}, nil
	}
	old, err := k.OpenCheckpoint(b)
	if errors.Is(err, ErrAnotherKey) {
		return eventlog.TreeHead{}, fmt.Errorf("%s: %w; publish each node to a directory of its own (%w)", path, err, ErrPublishRefused)
	}
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("%s does not verify with the node's key: %w; remove it to publish the whole tree again (%w)", path, err, ErrPublishRefused)
	}
	switch {
	case old.Size > head.Size:
		return eventlog.TreeHead{}, fmt.Errorf("%s holds a tree of %d events, the node's has %d: publishing it would roll the published log back (is the data dir older than what was published, restored from a backup?) (%w)",
			path, old.Size, head.Size, ErrPublishRefused)
	case old.Size == head.Size && old.Root != head.Root:
		return eventlog.TreeHead{}, fmt.Errorf("%s holds a tree of %d events with root %s, the node's tree of that size has root %s: the log forked (%w)",
			path, old.Size, B64(old.Root), B64(head.Root), ErrPublishRefused)
	case old.Size == head.Size || old.Size == 0:
		return old, nil
	}
	proof, err := src.Consistency(ctx, old.Size, head.Size)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("prove the node's tree consistent with %s: %w", path, err)
	}
	if err := tlog.CheckTree(proof, head.Size, head.Root, old.Size, old.Root); err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("the node's tree of %d events does not extend the tree of %d events in %s: the log forked (%w; %w)",
			head.Size, old.Size, path, err, ErrPublishRefused)
	}
	return old, nil
}

// publishTile writes tile t to target unless the same bytes are there
// already (left by a run cut short before its checkpoint), and reports
// whether it wrote.
func publishTile(ctx context.Context, src Source, t tlog.Tile, target Target) (bool, error) {
	data, err := src.Tile(ctx, t)
	if err != nil {
		return false, fmt.Errorf("read %s from %s: %w", TilePath(t), src.Via(), err)
	}
	if len(data) != t.W*tlog.HashSize {
		return false, fmt.Errorf("read %s from %s: %d bytes, want %d", TilePath(t), src.Via(), len(data), t.W*tlog.HashSize)
	}
	return target.Put(ctx, TilePath(t), data)
}

// publishBundle writes the event bundle of w events from leaf n·BundleSize
// to target unless the same bytes are there already, and reports whether it
// wrote.
func publishBundle(ctx context.Context, src Source, n int64, w int, target Target) (bool, error) {
	rel := BundlePath(n, w)
	b, err := bundleBytes(ctx, src, uint64(n*BundleSize)+1, w)
	if err != nil {
		return false, fmt.Errorf("read the events of %s from %s: %w", rel, src.Via(), err)
	}
	return target.Put(ctx, rel, b)
}

// LockDir takes the lock Publish holds on the publish directory dir, so that
// no Publish runs there until unlock: for whatever must see the directory
// still, as a copy to another host. It fails when a Publish holds it.
func LockDir(dir string) (unlock func(), err error) {
	return lockDir(filepath.Join(dir, LockFile))
}
