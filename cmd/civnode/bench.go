package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/bench"
)

func newBenchCommand(m *Main, g *globals) *cobra.Command {
	var cfg bench.Config
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load a node over loopback HTTP and print its figures beside this machine's limits",
		Long: `bench measures a node as the targets in docs/benchmarks.md state them, and
prints each figure beside the machine's own limit measured in the same run.

First, on an idle process, the reference limits: single-core Ed25519 sign and
verify rates (300-byte message, median of 7 bursts), the median latency of one
synced Pebble write, and a bare net/http server in this process that decodes,
re-encodes and (optionally) signs the mission JSON, at 64 connections.

Then the node: appends from 64 goroutines to a fresh log in process; a node
started from --binary on a temporary data dir (serve --addr 127.0.0.1:0),
filled with --events missions by 64 clients; sequential and 64-client
POST /v1/core/missions; SIGTERM, civnode verify --data-dir, and a timed restart;
16 readers of GET /v1/events?since=<random event>&limit=100 while the node's
RSS is sampled; 100 WebSocket clients of GET /v1/stream while missions are
created at 1,000 a second, timing each delivery from the event's timestamp
to its arrival. With --hostile, 150 missions completed with ~1 MiB results are
read in full pages by 8, then 32, then 128 clients, each level for
--hostile-duration, while 3 raw connections ask for a full page and never read
it and GET /v1/health is polled; each level's peak RSS rise over the filled
node is printed beside the block cache plus the response budget. With
--peer etcd, rounds of the node's 64-client creates alternate with etcd's Put
over gRPC from 64 goroutines (etcd v3.7.3 embedded, fsync on, built with go
from bench/peers/etcdput of the source tree bench runs in), and the medians are
printed side by side.

--node URL loads a running node on loopback instead (owner token from --token
or --token-file); the figures that need the process (restart, RSS, verify) are
then skipped, and the missions created stay in its chain.

Each timed phase runs for --duration. Progress goes to stderr, the table (or
with --json one JSON object) to stdout. Every figure is reported; none is
asserted.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			if err := cfg.Check(); err != nil {
				return usageError{err}
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
	f.StringVar(&cfg.Node, "node", "", "load the running node at this loopback `URL` instead of starting one")
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
