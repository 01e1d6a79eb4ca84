package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/backup"
	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/cmd/core"
	"github.com/civnode/civnode/eventlog"
)

// publishedHelp is the help of --published, which restore and import share.
const publishedHelp = "a directory or URL where the node's checkpoint was published (transparency publish --dir), to report how far behind it the restored chain is"

func (m *Main) newRestoreCommand(g *globals) *cobra.Command {
	var dataDirFlag, published string
	cmd := &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Make a data dir from a backup, verified before a node may start on it",
		Long: `restore copies the backup in BACKUP (civnode backup) into the data dir, which
must not exist or be empty, then verifies it before any node may start on it:
every event from genesis to the tip, the Merkle tree, the tip against the
backup's manifest, and the read models, which it rebuilds from the chain and
compares with the copied ones (the chain wins a difference). If a check
fails it removes what it copied and exits 1.

A backup is older than the node it came from. Observers may have seen later
checkpoints, and a node restored to an older tip that then appends would fork
the history they saw. With --published (the directory or URL the node
published its checkpoint to), restore says how far behind that checkpoint the
restored chain is, and refuses a backup that contradicts it. Bring a restored
node up to date from a newer export bundle with civnode import before it
appends (docs/operations.md).`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.restore(cmd.Context(), args[0], dataDirFlag, published, logger)
		},
	}
	cmd.Flags().StringVar(&dataDirFlag, "data-dir", "", datadir.Help)
	cmd.Flags().StringVar(&published, "published", "", publishedHelp)
	return cmd
}

func (m *Main) restore(ctx context.Context, src, flag, published string, logger *slog.Logger) (err error) {
	dir, err := datadir.Resolve(flag, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	undo, err := newTarget(dir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, undo())
		}
	}()
	progress, done := m.byteProgress("restore")
	man, err := backup.Restore(src, string(dir), progress)
	done()
	if err != nil {
		return fmt.Errorf("restore %s: %w", src, err)
	}
	node, err := localnode.OpenExisting(ctx, dir, logger)
	if err != nil {
		return m.invalid(err)
	}
	defer func() {
		if cerr := node.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	if tip := node.Log.Tip(); tip.Seq != man.TipSeq || tip.ID != man.TipID || node.Log.NodeDID() != man.NodeDID {
		return m.invalid(fmt.Errorf("the restored chain ends at seq %d (%s) of %s, the manifest says seq %d (%s) of %s",
			tip.Seq, tip.ID, node.Log.NodeDID(), man.TipSeq, man.TipID, man.NodeDID))
	}
	if err := m.verifyRestored(ctx, node); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "restored %s into %s\nnode      %s\ntip       seq %d, %s\n", src, dir, man.NodeDID, man.TipSeq, man.TipID)
	return m.reportBehind(ctx, node.Log, published)
}

// verifyRestored walks the whole chain and its tree, and rebuilds the read
// models from it, reporting any difference from the ones that came with it.
func (m *Main) verifyRestored(ctx context.Context, node *core.Core) error {
	progress, done := m.progress("verify", int64(node.Log.Tip().Seq))
	_, err := node.Log.Verify(ctx, progress)
	done()
	if err != nil {
		return m.invalid(err)
	}
	rebuilt, done := m.progress("rebuild", int64(node.Log.Tip().Seq))
	var onRebuild eventlog.RebuildProgress
	if rebuilt != nil {
		onRebuild = func(seq, _ uint64) { rebuilt(seq) }
	}
	diff, err := node.Log.RebuildModels(ctx, onRebuild)
	done()
	if err != nil {
		return m.invalid(fmt.Errorf("rebuild read models: %w", err))
	}
	if !diff.Same() {
		fmt.Fprintf(m.Stderr, "warning: the copied read models differed from the chain (%d missing, %d extra, %d changed keys); the ones rebuilt from the chain are live\n",
			diff.Missing, diff.Extra, diff.Changed)
	}
	return nil
}

// newTarget refuses a data dir that holds anything and creates it (0700) when
// missing. The function it returns removes what was put there since, for a
// restore or import that failed: the directory itself if newTarget made it.
func newTarget(dir datadir.Dir) (func() error, error) {
	ents, err := os.ReadDir(string(dir))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(string(dir), 0o700); err != nil {
			return nil, err
		}
		return func() error { return os.RemoveAll(string(dir)) }, nil
	case err != nil:
		return nil, err
	case len(ents) > 0:
		return nil, fmt.Errorf("%s is not empty; restore and import make a new data dir", dir)
	}
	return func() error {
		ents, err := os.ReadDir(string(dir))
		for _, e := range ents {
			err = errors.Join(err, os.RemoveAll(filepath.Join(string(dir), e.Name())))
		}
		return err
	}, nil
}

// reportBehind compares the chain with the checkpoint published at loc, when
// given: it says how many events the chain lacks, and refuses a chain whose
// tree disagrees with the checkpoint (another history, which must not go on).
func (m *Main) reportBehind(ctx context.Context, chain *eventlog.Log, loc string) error {
	if loc == "" {
		fmt.Fprintln(m.Stdout, "published not compared (give --published to learn whether observers saw later events)")
		return nil
	}
	signed, err := readPublishedCheckpoint(ctx, loc)
	if err != nil {
		return err
	}
	head, err := eventlog.OpenCheckpoint(signed, chain.NodeDID(), chain.PublicKey())
	if err != nil {
		return fmt.Errorf("the checkpoint at %s: %w", loc, err)
	}
	tip := int64(chain.Tip().Seq)
	if head.Size > tip {
		fmt.Fprintf(m.Stdout, "published checkpoint at size %d: this chain is %d events behind it\n", head.Size, head.Size-tip)
		fmt.Fprintf(m.Stderr, "warning: observers have seen %d events this data dir lacks. A node started on it would append other events at those seqs: a fork of the history they saw. "+
			"Import a newer export bundle (civnode import) instead, or recover the tail before it appends (docs/operations.md)\n", head.Size-tip)
		return nil
	}
	root, err := chain.TreeRoot(head.Size)
	if err != nil {
		return err
	}
	if root != head.Root {
		return m.invalid(fmt.Errorf("the checkpoint at %s (size %d) has another tree root than this chain at that size: the published history and this one differ", loc, head.Size))
	}
	fmt.Fprintf(m.Stdout, "published checkpoint at size %d: covered by this chain\n", head.Size)
	return nil
}

// readPublishedCheckpoint reads the checkpoint file of a published directory
// or URL.
func readPublishedCheckpoint(ctx context.Context, loc string) ([]byte, error) {
	const limit = 64 << 10
	if !strings.HasPrefix(loc, "http://") && !strings.HasPrefix(loc, "https://") {
		f, err := os.Open(filepath.Join(loc, "checkpoint"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, limit))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(loc, "/")+"/checkpoint", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/checkpoint: %s", loc, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}
