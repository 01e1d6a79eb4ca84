package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/internal/logkey"
)

// replayCmd is civnode replay: verify a stopped node's chain and rebuild
// its read models from it.
type replayCmd struct {
	m       *Main
	g       *globals
	dataDir string
}

func newReplayCommand(m *Main, g *globals) *cobra.Command {
	c := &replayCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Verify the local chain and rebuild every read model from it",
		Long:  replayHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", datadir.Help)
	return cmd
}

func (c *replayCmd) run(ctx context.Context) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(c.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	n, err := localnode.OpenExisting(ctx, dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		return fmt.Errorf("%w; stop the node first", err)
	}
	if err != nil {
		return m.invalid(err)
	}
	chain := n.Log
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	r, err := localnode.Replay(ctx, chain, m.progress)
	if err != nil {
		return m.invalid(err)
	}
	counts, diff := r.Counts, r.Diff
	tw := tabwriter.NewWriter(m.Stdout, 0, 8, 2, ' ', 0)
	types := make([]string, 0, len(counts))
	for t := range counts {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		fmt.Fprintf(tw, "%s\t%d\n", t, counts[t])
	}
	fmt.Fprintf(tw, "total\t%d\n", r.Verified.Events)
	fmt.Fprintf(tw, "\nread models rebuilt\t\n")
	for _, f := range r.Figures {
		fmt.Fprintf(tw, "%s\t%v\n", f.Name, f.Value)
	}
	fmt.Fprintf(tw, "\ndifferences from the kept models\t%d\n", diff.Missing+diff.Extra+diff.Changed)
	if !diff.Same() {
		fmt.Fprintf(tw, "missing keys\t%d\nextra keys\t%d\nchanged keys\t%d\n", diff.Missing, diff.Extra, diff.Changed)
		for _, e := range diff.Examples {
			fmt.Fprintf(tw, "  %s\t\n", e)
		}
	}
	fmt.Fprintf(tw, "\nstate commitments recomputed\t%d\n", r.StateChecked)
	if mm := r.StateMismatch; mm != nil {
		fmt.Fprintf(tw, "first that differs\tseq %d, through seq %d\n  signed\t%s, %d entries\n  the events give\t%s, %d entries\n",
			mm.Seq, mm.ThroughSeq, mm.Signed, mm.SignedEntries, mm.Derived, mm.DerivedEntries)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !diff.Same() {
		logger.Warn("the kept read models differed from the chain; the rebuilt ones are live now",
			logkey.Missing, diff.Missing, logkey.Extra, diff.Extra, logkey.Changed, diff.Changed)
	}
	if err := r.Record(ctx, chain); err != nil {
		return err
	}
	if r.StateMismatch != nil {
		fmt.Fprintf(m.Stdout, "invalid: %v\n", r.StateMismatch)
		return &reportedError{r.StateMismatch}
	}
	return nil
}
