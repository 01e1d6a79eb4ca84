package main

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/transparency"
)

// proveCmd is civnode transparency prove: the proof that one event is in
// the node's tree.
type proveCmd struct {
	m         *Main
	g         *globals
	treeSize  int64
	witnessed bool
	addr      string
	token     string
	dataDir   string
}

func newTransparencyProveCommand(m *Main, g *globals) *cobra.Command {
	cfg := &proveCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "prove SEQ [--tree-size N | --witnessed] [--addr URL --token T | --data-dir DIR]",
		Short: "Print the proof that the event with SEQ is in the node's tree, checkable offline",
		Long:  transparencyProveHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil || seq == 0 {
				return usageErrorf("SEQ %q: want the seq of an event, an integer of at least 1", args[0])
			}
			if cmd.Flags().Changed("tree-size") && cfg.treeSize < 1 {
				return usageErrorf("--tree-size must be at least 1")
			}
			if cfg.witnessed && cmd.Flags().Changed("tree-size") {
				return usageErrorf("give --tree-size or --witnessed, not both")
			}
			token, err := proveToken(cmd, m.Getenv, cfg.token)
			if err != nil {
				return err
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return cfg.run(cmd.Context(), logger, token, seq)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.treeSize, "tree-size", 0, "prove in the tree of the first `N` events (default: the current tree)")
	f.BoolVar(&cfg.witnessed, "witnessed", false, "prove in the tree of the node's witnessed checkpoint, which the proof then carries with its cosignatures")
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node: its URL with --token, else HOST:PORT of the node running on --data-dir")
	f.StringVar(&cfg.token, "token", "", "an owner or observer token of the node at --addr (default $"+tokenEnv+")")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	return cmd
}

func (cfg *proveCmd) run(ctx context.Context, logger *slog.Logger, token string, seq uint64) (err error) {
	m := cfg.m
	var src transparency.Source
	if token != "" {
		c, err := observerClient(cfg.addr, token, "")
		if err != nil {
			return err
		}
		defer c.Close()
		src = transparency.APISource(c)
	} else {
		s, closeSrc, err := openSource(ctx, m, logger, cfg.dataDir, cfg.addr)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := closeSrc(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		src = s
	}
	var p *transparency.Proof
	if cfg.witnessed {
		p, err = transparency.ProveWitnessed(ctx, src, seq)
	} else {
		p, err = transparency.Prove(ctx, src, seq, cfg.treeSize)
	}
	if err != nil {
		return err
	}
	out, err := p.Marshal()
	if err != nil {
		return err
	}
	_, err = m.Stdout.Write(out)
	return err
}
