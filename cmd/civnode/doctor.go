package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands/servicenet"
)

func newDoctorCommand(m *Main, g *globals) *cobra.Command {
	var dataDirFlag, addrFlag, registryURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a node's data dir, chain, port and registry, and say how to fix what is wrong",
		Long: `doctor checks what a node needs, one line per check, and for each problem
prints what to do about it:

  data_dir             exists, is a directory, mode 0700, owned by you
  db                   the event log's database is there
  node_key             node.key: mode 0600, owned by you, an Ed25519 key
  control_token        control.token: mode 0600, owned by you, one token line
  registry_credential  registry.credential, if there: mode 0600, one line
  wallets              wallets/*.key, if any: mode 0600, valid keys
  disk                 free space where the data dir is
  chain                the chain verifies from the last full verify to the tip
  read_models          the read models are the tip's, in this version's layout
  node                 a running node answers, is healthy and takes control.token
  port                 --addr is free, or served by this data dir's node
  registry             --registry-url answers GET /v1/agents within 5 s;
                       with --registry-url "" (no registry) it says so and passes

The chain check starts where the last civnode verify --data-dir ended, which
it recorded in the store: the event there must be unchanged, and every event
after it, and the genesis event, must verify. Without such a record it checks
the newest 4096 events and the genesis event. While a node runs it holds the
store; doctor then asks the node instead, over control.sock, or over TCP at
--addr once the node there has proved it holds node.key.

doctor records nothing in the store (no event, audit entry or checkpoint),
and never prints a key, token or credential. A registry that cannot be
reached is a warning: the node runs without it, and only the registry routes
fail.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 a
mistake on the command line. --json prints the report as one JSON object
(docs/doctor.md).`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			addr, err := localnode.HostPort(addrFlag)
			if err != nil {
				return usageErrorf("--addr %q: %w", addrFlag, err)
			}
			// The client checks the URL as serve does; the signer is never called here.
			if registryURL != "" {
				if _, err := servicenet.New(servicenet.Config{BaseURL: registryURL, Sign: func([]byte) []byte { return nil }}); err != nil {
					return usageErrorf("--registry-url: %w", err)
				}
			}
			dir, err := datadir.Resolve(dataDirFlag, m.Getenv, m.HomeDir)
			if err != nil {
				return err
			}
			rep, err := doctor.Run(cmd.Context(), dir, doctor.Options{Addr: addr, RegistryURL: registryURL, Logger: logger,
				Progress: m.progress, Reach: localnode.Reach, Prove: localnode.ProveConn})
			if err != nil {
				return err
			}
			if asJSON {
				err = rep.WriteJSON(m.Stdout)
			} else {
				err = rep.WriteText(m.Stdout)
			}
			if err != nil {
				return fmt.Errorf("print report: %w", err)
			}
			// A failed check exits 1; the report has said why.
			if rep.Failed > 0 {
				return &reportedError{fmt.Errorf("doctor: %d checks failed", rep.Failed)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDirFlag, "data-dir", "", datadir.Help)
	f.StringVar(&addrFlag, "addr", "127.0.0.1:7777", "the node's listen address HOST:PORT, as given to serve")
	f.StringVar(&registryURL, "registry-url", localnode.DefaultRegistryURL, "the agent registry the node proxies (`URL`; \"\": none), as given to serve")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}
