package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// treeDirCmd is civnode transparency publish: the tree's tiles and signed
// checkpoint written to a directory, for a static host.
type treeDirCmd struct {
	m       *Main
	g       *globals
	dir     string
	dataDir string
	addr    string
	// unwitnessed publishes a running node's newest checkpoint even while
	// its witnesses have not cosigned it.
	unwitnessed bool
}

func newTransparencyPublishCommand(m *Main, g *globals) *cobra.Command {
	cfg := &treeDirCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "publish --dir DIR [--data-dir DIR] [--addr HOST:PORT]",
		Short: "Write the tree's hash tiles and signed checkpoint to a directory, for a static host",
		Long:  transparencyPublishHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.dir == "" {
				return usageErrorf("transparency publish needs --dir DIR")
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return cfg.run(cmd.Context(), logger)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.dir, "dir", "", "directory to write the checkpoint and tiles to (created if missing)")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "address HOST:PORT of the node running on --data-dir, used when its control.sock cannot be reached")
	f.BoolVar(&cfg.unwitnessed, "unwitnessed", false, "publish a running node's newest checkpoint even while its witnesses have not cosigned it (a mirror that requires them waits for a cosigned one)")
	return cmd
}

func (cfg *treeDirCmd) run(ctx context.Context, logger *slog.Logger) (err error) {
	m := cfg.m
	dir, err := filepath.Abs(cfg.dir)
	if err != nil {
		return fmt.Errorf("publish directory: %w", err)
	}
	src, closeSrc, err := openSource(ctx, m, logger, cfg.dataDir, cfg.addr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeSrc(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	witnessedOnly, err := cfg.hasWitnesses(ctx, src)
	if err != nil {
		return err
	}
	p, err := transparency.Publish(ctx, src, dir, transparency.PublishOptions{
		Repaired: func(path string) {
			fmt.Fprintf(m.Stderr, "civnode: %s did not match the node's tree (changed or lost since it was published); written again\n", path)
		},
		Progress:      cfg.progress,
		WitnessedOnly: witnessedOnly,
	})
	if err != nil {
		return err
	}
	if err := cfg.print(dir, p); err != nil {
		return err
	}
	if !witnessedOnly && p.CheckpointWritten && !p.Witnessed {
		if w, err := src.Witnessed(ctx); err == nil && w != nil {
			fmt.Fprintln(m.Stderr, "civnode: the checkpoint written is not witnessed (--unwitnessed): the running node's newest tree is not cosigned yet; a mirror that requires its witnesses waits for a cosigned one")
		}
	}
	if p.Waiting {
		_, err = fmt.Fprintf(m.Stdout, "the node's newest tree (size %d) is not witnessed yet: its tiles and bundles are published, its checkpoint and seal will be once a quorum of the node's witnesses cosigned it (run again)\n", p.Tiles.Size)
	}
	return err
}

// hasWitnesses reports whether the node submits its checkpoints to
// witnesses: a stopped data dir holds their cosignatures, a running node
// lists them in GET /v1/transparency. Such a node's published checkpoint
// and seal are then only ever witnessed ones, as serve --publish-dir
// publishes them, so that a mirror requiring witnesses never meets one that
// is not. Through a running node's API, which seals only its current tree,
// the checkpoint is written once that tree is cosigned; --unwitnessed writes
// the plain one meanwhile.
func (cfg *treeDirCmd) hasWitnesses(ctx context.Context, src transparency.Source) (bool, error) {
	if _, own := src.(interface {
		SealAt(context.Context, int64) (eventlog.Seal, error)
	}); !own {
		if cfg.unwitnessed {
			return false, nil
		}
		return transparency.SubmitsToWitnesses(ctx, src)
	}
	m := cfg.m
	dir, err := datadir.Resolve(cfg.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(dir.CosignaturesPath())
	return err == nil, nil
}

func (cfg *treeDirCmd) print(dir string, p transparency.Published) error {
	old, head, written, kept, repaired := p.Old, p.Head, p.Written, p.Kept, p.Repaired
	var what string
	switch {
	case p.Waiting && !p.CheckpointWritten && head.Size == 0:
		what = fmt.Sprintf("%s written, no checkpoint: no tree is witnessed yet", inTiles(written))
	case p.Waiting && !p.CheckpointWritten:
		what = fmt.Sprintf("%s written, checkpoint left at the newest witnessed tree", inTiles(written))
	case old.Size == head.Size && p.CheckpointWritten:
		what = "already published, witnessed checkpoint written"
	case old.Size == head.Size:
		what = "already published, nothing to write"
	case old.Size == 0:
		what = fmt.Sprintf("%s written, checkpoint written", inTiles(written))
	default:
		what = fmt.Sprintf("%s written, checkpoint moved from tree size %d", inTiles(written), old.Size)
	}
	if kept > 0 {
		what += fmt.Sprintf(" (%s already there from a run cut short)", inTiles(kept))
	}
	if repaired > 0 {
		what += fmt.Sprintf("; rewrote %s of the published tree that did not match the node's", inTiles(repaired))
	}
	if p.Witnessed && old.Size != head.Size {
		what += " (the witnessed checkpoint)"
	}
	_, err := fmt.Fprintf(cfg.m.Stdout, "published %s tree size %d, root %s, to %s: %s\n", p.Origin, head.Size, transparency.B64(head.Root), dir, what)
	return err
}

// progress draws a bar of tiles on stderr when it is a terminal and there
// are enough tiles to wait for (a first publish of a large tree).
func (cfg *treeDirCmd) progress(total int) (func(int), func()) {
	m := cfg.m
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

// inTiles counts tiles in words.
func inTiles(n int) string {
	if n == 1 {
		return "1 tile"
	}
	return fmt.Sprintf("%d tiles", n)
}
