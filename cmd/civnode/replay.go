package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/eventlog"
)

func (m *Main) newReplayCommand(g *globals) *cobra.Command {
	var dataDirFlag string
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Walk and verify the local chain and print counts per event type",
		Long: `replay rebuilds every read model of a stopped node (identities, bindings,
profiles, missions, balances, treasuries, game installs) from its chain alone,
walks the whole chain from genesis to tip verifying every event as verify
--data-dir does, and prints how many events of each type it holds, the total,
and what the rebuilt models hold. It records replay.completed in the audit log.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return m.replay(cmd.Context(), dataDirFlag, logger)
		},
	}
	cmd.Flags().StringVar(&dataDirFlag, "data-dir", "", dataDirHelp)
	return cmd
}

func (m *Main) replay(ctx context.Context, flag string, logger *slog.Logger) (err error) {
	dir, err := m.resolveDataDir(flag)
	if err != nil {
		return err
	}
	node, err := dir.openCore(ctx, logger)
	if errors.Is(err, errDataDirInUse) {
		return fmt.Errorf("%w; stop the node first", err)
	}
	if err != nil {
		return m.invalid(err)
	}
	chain := node.chain
	defer func() {
		if cerr := node.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	progress, done := m.progress("replay", int64(chain.Tip().Seq))
	rep, err := chain.Verify(ctx, progress)
	done()
	if err != nil {
		return m.invalid(err)
	}
	// Verify fixed the tip it checked; counting stops there too.
	counts := map[string]uint64{}
	if err := chain.Scan(1, rep.Events, func(ev *eventlog.Event) error {
		counts[ev.Type]++
		return ctx.Err()
	}); err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 8, 2, ' ', 0)
	types := make([]string, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(tw, "%s\t%d\n", t, counts[t])
	}
	fmt.Fprintf(tw, "total\t%d\n", rep.Events)
	metrics := node.identities.Metrics()
	missions := node.missions.Metrics()
	var treasury int64
	for _, v := range missions.Treasuries {
		treasury += v
	}
	models := map[string]any{
		"identities": metrics.Identities, "bindings": metrics.Bindings.Total,
		"bindings_active": metrics.Bindings.Active, "skipped": node.identities.Skipped(),
		"missions": missions.Total, "missions_open": missions.Total - missions.ByState["settled"],
		"missions_settled": missions.ByState["settled"], "credits_paid": missions.Paid.AgentCredit,
		"treasury_credits": treasury, "missions_skipped": node.missions.Skipped(),
		"starter_missions_installed": node.gameState.StarterInstalled(), "mission_packs_installed": len(node.gameState.Packs()),
		"game_skipped": node.gameState.Skipped(),
	}
	fmt.Fprintf(tw, "\nread models rebuilt\t\n")
	for _, k := range []string{"identities", "bindings", "bindings_active", "skipped",
		"missions", "missions_open", "missions_settled", "credits_paid", "treasury_credits", "missions_skipped",
		"starter_missions_installed", "mission_packs_installed", "game_skipped"} {
		fmt.Fprintf(tw, "%s\t%v\n", k, models[k])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := chain.Audit(ctx, "replay.completed", chain.NodeDID(), map[string]any{
		"event_count": rep.Events, "chain_tip_hash": rep.TipHash, "types": counts, "models": models,
	}); err != nil {
		return fmt.Errorf("audit replay.completed: %w", err)
	}
	return nil
}
