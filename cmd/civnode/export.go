package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
)

// exportCmd is civnode export: the signed bundle of a stopped node's chain.
type exportCmd struct {
	m       *Main
	g       *globals
	dataDir string
}

func newExportCommand(m *Main, g *globals) *cobra.Command {
	c := &exportCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write a signed export bundle of the local chain to stdout",
		Long:  exportHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", datadir.Help)
	return cmd
}

func (c *exportCmd) run(ctx context.Context) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(c.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	chain, err := localnode.OpenChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		return fmt.Errorf("%w; a running node serves its export at GET /v1/events/export", err)
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := chain.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	takeBack := takeBackOutput(m.Stdout)
	progress, done := m.progress("export", int64(chain.Tip().Seq))
	sum, err := chain.WriteBundle(ctx, m.Stdout, eventlog.BundleHeader{}, progress)
	done()
	if err != nil {
		return errors.Join(fmt.Errorf("%w; no bundle was written", err), takeBack())
	}
	if _, err := chain.Audit(ctx, "export.sealed", chain.NodeDID(), map[string]any{
		"export_id": sum.ExportID, "event_count": sum.EventCount, "chain_tip_hash": sum.TipHash,
	}); err != nil {
		// The bundle is whole, sealed and verifies on its own, so it is left:
		// it may be what the store is rebuilt from. The exit status still says
		// the store is not sound (a damaged block outside the events, met by
		// a background compaction, fails the log), as verify --data-dir does.
		return fmt.Errorf("the bundle on stdout is whole (%d events, export %s) and verifies on its own, but export.sealed could not be recorded in the audit log: %w; "+
			"run civnode verify --data-dir to find the damage", sum.EventCount, sum.ExportID, err)
	}
	logger.Debug("exported", logkey.ExportID, sum.ExportID, logkey.EventCount, sum.EventCount)
	return nil
}

// takeBackOutput returns a function that undoes what a failed export wrote to
// w, when w is a regular file (civnode export > bundle.json): it cuts the file
// back to the size it has now, so no partial bundle is left to be mistaken for
// one. Anything else (a pipe, a terminal) cannot be taken back and is left as
// it is; the bundle's seal is written last, so what went out does not parse.
// The size, not the offset, is kept, so that >> keeps what the file held.
func takeBackOutput(w io.Writer) func() error {
	f, ok := w.(*os.File)
	if !ok {
		return func() error { return nil }
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return func() error { return nil }
	}
	size := fi.Size()
	return func() error {
		if err := f.Truncate(size); err != nil {
			return fmt.Errorf("remove the partial bundle from stdout: %w", err)
		}
		if _, err := f.Seek(size, io.SeekStart); err != nil {
			return fmt.Errorf("remove the partial bundle from stdout: %w", err)
		}
		return nil
	}
}
