package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/eventlog"
)

func (m *Main) newExportCommand(g *globals) *cobra.Command {
	var dataDirFlag string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write a signed export bundle of the local chain to stdout",
		Long: `export streams the whole chain of a stopped node to stdout as a signed export
bundle (wire.md §4) and records export.sealed in the audit log. A running node
serves the same bundle at GET /v1/events/export.

  civnode export --data-dir DIR > bundle.json
  civnode export --data-dir DIR | civnode verify -`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.export(cmd.Context(), dataDirFlag, logger)
		},
	}
	cmd.Flags().StringVar(&dataDirFlag, "data-dir", "", dataDirHelp)
	return cmd
}

func (m *Main) export(ctx context.Context, flag string, logger *slog.Logger) (err error) {
	dir, err := m.resolveDataDir(flag)
	if err != nil {
		return err
	}
	chain, err := dir.openChain(logger)
	if errors.Is(err, errDataDirInUse) {
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
	progress, done := m.progress("export", int64(chain.Tip().Seq))
	sum, err := chain.WriteBundle(ctx, m.Stdout, eventlog.BundleHeader{}, progress)
	done()
	if err != nil {
		return err
	}
	if _, err := chain.Audit(ctx, "export.sealed", chain.NodeDID(), map[string]any{
		"export_id": sum.ExportID, "event_count": sum.EventCount, "chain_tip_hash": sum.TipHash,
	}); err != nil {
		return fmt.Errorf("audit export.sealed: %w", err)
	}
	logger.Debug("exported", "export_id", sum.ExportID, "event_count", sum.EventCount)
	return nil
}
