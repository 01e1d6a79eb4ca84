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
		Long:  doctorHelp,
		Args:  usageArgs(cobra.NoArgs),
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
