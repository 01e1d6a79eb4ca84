package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/bench"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
)

func newBenchCommand(m *Main, g *globals) *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	var caFile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a node over loopback HTTP and print its figures beside this machine's limits",
		Long:  benchHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			if err := cfg.Check(); err != nil {
				return usageError{err}
			}
			if cfg.TLS, err = localnode.ClientTLS(caFile); err != nil {
				return err
			}
			cfg.Logger, cfg.Progress = logger, m.progress
			res, err := bench.Run(cmd.Context(), cfg)
			if res == nil {
				return err
			}
			// A node that could not stop after the run still leaves its
			// figures to print; the failure is returned after them.
			var werr error
			if asJSON {
				werr = res.WriteJSON(m.Stdout)
			} else {
				werr = res.WriteTable(m.Stdout)
			}
			if err != nil {
				return err
			}
			return werr
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Events, "events", 20000, "missions to create before the timed phases (1000000 for the full-scale run)")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "length of each timed phase")
	f.StringVar(&cfg.Node, "node", "", "load the running node at this loopback `URL` (http:// or https://) instead of starting one")
	f.StringVar(&caFile, "ca-file", "", localnode.CAFileHelp)
	f.StringVar(&cfg.Token, "token", "", "owner token of the --node node (visible to other local users; prefer --token-file)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "read the owner token of the --node node from `FILE`")
	f.StringVar(&cfg.Binary, "binary", "", "civnode `BINARY` to run serve and verify with (default: this executable)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of the table")
	f.BoolVar(&cfg.Hostile, "hostile", false, "add the hostile phase: ~150 MiB of completed missions, full-page reads by 8, 32 and 128 clients, 3 that never read")
	f.DurationVar(&cfg.HostileDuration, "hostile-duration", 10*time.Second, "length of each reader level of the hostile phase")
	f.StringVar(&cfg.TmpDir, "tmp", "", "parent `DIR` of the temporary data dirs (default $TMPDIR)")
	f.BoolVar(&cfg.StreamOnly, "stream-only", false, "run only the stream phase, after the sign and synced-write limits and the fill")
	f.StringSliceVar(&cfg.Peers, "peer", nil, "measure `SYSTEM` beside the node's 64-client creates, alternating with them: etcd "+
		"(Put over gRPC, fsync on, built with go from bench/peers/etcdput of the source tree bench runs in)")
	f.IntVar(&cfg.PeerRounds, "peer-rounds", 3, "rounds of node creates then peer writes; the figures are their medians")
	f.IntVar(&cfg.PeerPuts, "peer-puts", 20000, "writes to the peer in a round")
	return cmd
}
