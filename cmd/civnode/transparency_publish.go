package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/atomicfile"
)

// The files of a publish directory besides the tiles. checkpoint and tile/
// are what C2SP tlog-tiles specifies; verifier-key is a convenience for an
// observer's first visit (it is no trust anchor: whoever can replace the
// checkpoint can replace it too); the dot files are publish's own and need
// not be served.
const (
	publishCheckpoint  = "checkpoint"
	publishVerifierKey = "verifier-key"
	publishLock        = ".publish.lock"
	publishTmp         = ".tmp"
)

type publishConfig struct {
	dir     string
	dataDir string
	addr    string
}

func (m *Main) newTransparencyPublishCommand(g *globals) *cobra.Command {
	var cfg publishConfig
	cmd := &cobra.Command{
		Use:   "publish --dir DIR [--data-dir DIR] [--addr HOST:PORT]",
		Short: "Write the tree's hash tiles and signed checkpoint to a directory, for a static host",
		Long: `publish writes the node's Merkle tree to --dir in the C2SP tlog-tiles layout, so
that any static host or CDN can serve observers without touching the node:

  DIR/checkpoint                 the signed checkpoint (text/plain)
  DIR/tile/<L>/<N>[.p/<W>]       hash tiles of height 8 (application/octet-stream),
                                 e.g. tile/0/x001/234; a full tile never changes
  DIR/verifier-key               the node's note verifier key, one line

It is incremental: it reads DIR/checkpoint, checks it with the node's key and
proves the node's tree consistent with it, then writes only the tiles that are
new since that tree, and the new checkpoint last. Every file is written to
DIR/.tmp, synced and renamed into place, and the tiles' directories are synced
before the checkpoint is renamed: a reader never sees a checkpoint whose tiles
are missing, and a run cut short is simply run again.

Each run also checks every tile already published against the tree (a full
tile against its parent, a partial one against the node's) and writes again,
naming it on stderr, any that was changed or lost.

It refuses to publish over a checkpoint signed by another key, of a larger
tree, or of a tree the node's does not extend (a fork); one directory is one
node's log. Run it from cron, or after each batch of events:

  civnode transparency publish --dir /srv/www/civnode-log

The tree is read from the node running on --data-dir through its API (as
token does), or from the data dir itself when no node runs.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.dir == "" {
				return usageErrorf("transparency publish needs --dir DIR")
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.publish(cmd.Context(), logger, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dir, "dir", "", "directory to write the checkpoint and tiles to (created if missing)")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "address HOST:PORT of the node running on --data-dir, used when its control.sock cannot be reached")
	return cmd
}

func (m *Main) publish(ctx context.Context, logger *slog.Logger, cfg publishConfig) (err error) {
	dir, err := filepath.Abs(cfg.dir)
	if err != nil {
		return fmt.Errorf("publish directory: %w", err)
	}
	src, closeSrc, err := m.openLocalSource(ctx, logger, cfg.dataDir, cfg.addr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeSrc(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		// Readable by a web server running as another user, whatever the
		// umask; an existing directory keeps the mode its owner gave it.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create the publish directory: %w", err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("create the publish directory: %w", err)
		}
	}
	unlock, err := lockPublishDir(filepath.Join(dir, publishLock))
	if err != nil {
		return err
	}
	defer unlock()
	// A run cut short may have left temporary files; nothing refers to them.
	tmpDir := filepath.Join(dir, publishTmp)
	if err := os.RemoveAll(tmpDir); err != nil {
		return fmt.Errorf("clear %s: %w", tmpDir, err)
	}
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", tmpDir, err)
	}
	defer os.Remove(tmpDir)

	vkey, signed, err := src.head(ctx)
	if err != nil {
		return err
	}
	k, err := parseCivnodeKey(vkey)
	if err != nil {
		return fmt.Errorf("the node's %w", err)
	}
	head, err := k.openCheckpoint(signed)
	if err != nil {
		return fmt.Errorf("the node's own checkpoint: %w", err)
	}
	old, err := publishedHead(ctx, dir, k, src, head)
	if err != nil {
		return err
	}

	ds := newDirSyncer(dir)
	// The new checkpoint vouches for the old tree's tiles too: any that was
	// changed or lost since it was written is written again first.
	repaired, err := verifyPublishedTiles(ctx, src, old.Size, dir, tmpDir, ds)
	if err != nil {
		return err
	}
	for _, rel := range repaired {
		fmt.Fprintf(m.Stderr, "civnode: %s did not match the node's tree (changed or lost since it was published); written again\n", filepath.Join(dir, filepath.FromSlash(rel)))
	}

	tiles := tlog.NewTiles(tileHeight, old.Size, head.Size)
	written, kept := 0, 0
	progress, done := m.tileProgress(len(tiles))
	for i, t := range tiles {
		w, err := publishTile(ctx, src, t, dir, tmpDir, ds)
		if err != nil {
			done()
			return err
		}
		if w {
			written++
		} else {
			kept++
		}
		progress(i + 1)
	}
	done()
	if err := publishSmallFile(filepath.Join(dir, publishVerifierKey), tmpDir, []byte(vkey+"\n"), ds); err != nil {
		return err
	}
	// Every tile the checkpoint needs is durable before the checkpoint is.
	if err := ds.sync(); err != nil {
		return fmt.Errorf("sync the tiles: %w", err)
	}
	if old.Size != head.Size {
		if err := replaceFile(filepath.Join(dir, publishCheckpoint), tmpDir, signed, 0o644); err != nil {
			return err
		}
		if err := atomicfile.SyncDir(dir); err != nil {
			return err
		}
	}
	return m.printPublished(dir, k, old, head, written, kept, len(repaired))
}

// verifyPublishedTiles checks every tile of the tree of size n already
// published in dir and writes again, from src, each one that is missing or
// does not match; it returns their paths. Tiles are checked from the top
// level down: a partial tile against src (there are at most one a level), a
// full tile against the hash its parent, checked before it, holds for it. So
// a run reads every published tile and hashes it, but asks src only for the
// partial tiles and the ones to repair.
func verifyPublishedTiles(ctx context.Context, src treeSource, n int64, dir, tmpDir string, ds *dirSyncer) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	tiles := tlog.NewTiles(tileHeight, 0, n)
	slices.SortStableFunc(tiles, func(a, b tlog.Tile) int { return b.L - a.L })
	var repaired []string
	for _, t := range tiles {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if t.W == 1<<tileHeight {
			ok, err := fullTileMatches(t, n, dir)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
		w, err := publishTile(ctx, src, t, dir, tmpDir, ds)
		if err != nil {
			return nil, err
		}
		if w {
			repaired = append(repaired, tilePath(t))
		}
	}
	return repaired, nil
}

// fullTileMatches reports whether the full tile t of a tree of size n, as
// published in dir, hashes to the entry its parent tile in dir holds for it.
// A missing or short file does not match.
func fullTileMatches(t tlog.Tile, n int64, dir string) (bool, error) {
	data, err := readTileFile(dir, t)
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
	above := n >> (uint(t.L+1) * tileHeight)
	parent := tlog.Tile{H: tileHeight, L: t.L + 1, N: t.N >> tileHeight}
	parent.W = int(min(above-parent.N<<tileHeight, 1<<tileHeight))
	pdata, err := readTileFile(dir, parent)
	if err != nil {
		return false, err
	}
	i := int(t.N%(1<<tileHeight)) * tlog.HashSize
	if len(pdata) != parent.W*tlog.HashSize || i+tlog.HashSize > len(pdata) {
		return false, nil // the parent is repaired first; a damaged one fails its own check
	}
	return bytes.Equal(pdata[i:i+tlog.HashSize], hs[0][:]), nil
}

// readTileFile reads tile t in dir, nil when it is missing.
func readTileFile(dir string, t tlog.Tile) ([]byte, error) {
	b, err := readOptionalFile(filepath.Join(dir, filepath.FromSlash(tilePath(t))))
	if err != nil {
		return nil, fmt.Errorf("verify the published tiles: %w", err)
	}
	return b, nil
}

// publishedHead reads the checkpoint already in dir, if any, and requires
// that the node's tree extends it: the same key, a tree at least as large,
// and a consistency proof from it. It returns the empty tree when dir has no
// checkpoint.
func publishedHead(ctx context.Context, dir string, k civnodeKey, src treeSource, head eventlog.TreeHead) (eventlog.TreeHead, error) {
	path := filepath.Join(dir, publishCheckpoint)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return eventlog.TreeHead{}, nil
	}
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("read the published checkpoint: %w", err)
	}
	old, err := k.openCheckpoint(b)
	if errors.Is(err, errAnotherKey) {
		return eventlog.TreeHead{}, fmt.Errorf("%s: %w; publish each node to a directory of its own", path, err)
	}
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("%s does not verify with the node's key: %w; remove it to publish the whole tree again", path, err)
	}
	switch {
	case old.Size > head.Size:
		return eventlog.TreeHead{}, fmt.Errorf("%s holds a tree of %d events, the node's has %d: publishing it would roll the published log back (is the data dir older than what was published, restored from a backup?)",
			path, old.Size, head.Size)
	case old.Size == head.Size && old.Root != head.Root:
		return eventlog.TreeHead{}, fmt.Errorf("%s holds a tree of %d events with root %s, the node's tree of that size has root %s: the log forked",
			path, old.Size, b64(old.Root), b64(head.Root))
	case old.Size == head.Size || old.Size == 0:
		return old, nil
	}
	proof, err := src.consistency(ctx, old.Size, head.Size)
	if err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("prove the node's tree consistent with %s: %w", path, err)
	}
	if err := tlog.CheckTree(proof, head.Size, head.Root, old.Size, old.Root); err != nil {
		return eventlog.TreeHead{}, fmt.Errorf("the node's tree of %d events does not extend the tree of %d events in %s: the log forked (%w)",
			head.Size, old.Size, path, err)
	}
	return old, nil
}

// publishTile writes tile t under dir unless the same bytes are there
// already (left by a run cut short before its checkpoint), and reports
// whether it wrote.
func publishTile(ctx context.Context, src treeSource, t tlog.Tile, dir, tmpDir string, ds *dirSyncer) (bool, error) {
	data, err := src.tile(ctx, t)
	if err != nil {
		return false, fmt.Errorf("read %s from %s: %w", tilePath(t), src.via(), err)
	}
	if len(data) != t.W*tlog.HashSize {
		return false, fmt.Errorf("read %s from %s: %d bytes, want %d", tilePath(t), src.via(), len(data), t.W*tlog.HashSize)
	}
	path := filepath.Join(dir, filepath.FromSlash(tilePath(t)))
	parent := filepath.Dir(path)
	// Synced even when nothing is written: the run that wrote a file found
	// here may have stopped before syncing its directory.
	ds.changed(parent)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err := ds.mkdirAll(parent); err != nil {
		return false, err
	}
	return true, replaceFile(path, tmpDir, data, 0o644)
}

// publishSmallFile writes a file that may already hold data, only if it does not.
func publishSmallFile(path, tmpDir string, data []byte, ds *dirSyncer) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	ds.changed(filepath.Dir(path))
	return replaceFile(path, tmpDir, data, 0o644)
}

func (m *Main) printPublished(dir string, k civnodeKey, old, head eventlog.TreeHead, written, kept, repaired int) error {
	var what string
	switch {
	case old.Size == head.Size:
		what = "already published, nothing to write"
	case old.Size == 0:
		what = fmt.Sprintf("%s written, checkpoint written", tileCount(written))
	default:
		what = fmt.Sprintf("%s written, checkpoint moved from tree size %d", tileCount(written), old.Size)
	}
	if kept > 0 {
		what += fmt.Sprintf(" (%s already there from a run cut short)", tileCount(kept))
	}
	if repaired > 0 {
		what += fmt.Sprintf("; rewrote %s of the published tree that did not match the node's", tileCount(repaired))
	}
	_, err := fmt.Fprintf(m.Stdout, "published %s tree size %d, root %s, to %s: %s\n", k.origin, head.Size, b64(head.Root), dir, what)
	return err
}

// tileProgress draws a bar of tiles on stderr when it is a terminal and there
// are enough tiles to wait for (a first publish of a large tree).
func (m *Main) tileProgress(total int) (func(int), func()) {
	if total < 1000 || !isTerminal(m.Stderr) {
		return func(int) {}, func() {}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(m.Stderr),
		progressbar.OptionSetDescription("publish"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("tiles"),
		progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return func(n int) { bar.Set(n) }, func() { bar.Finish() }
}

// tileCount counts tiles in words.
func tileCount(n int) string {
	if n == 1 {
		return "1 tile"
	}
	return fmt.Sprintf("%d tiles", n)
}
