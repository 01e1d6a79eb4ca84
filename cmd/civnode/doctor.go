package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands/servicenet"
)

func newDoctorCommand(m *Main, g *globals) *cobra.Command {
	var asJSON bool
	var caFile string
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
			settings, err := m.serveSettings(cmd, g)
			if err != nil {
				return err
			}
			dataDirFlag, _ := settings.GetString("data-dir")
			addrFlag, _ := settings.GetString("addr")
			registryURL, _ := settings.GetString("registry-url")
			addr, https, err := localnode.HostPort(addrFlag)
			if err != nil {
				return usageErrorf("--addr %q: %w", addrFlag, err)
			}
			reach, prove := localnode.Reach, localnode.ProveConn
			if https {
				if reach, prove, err = localnode.DoctorOverTLS(addr, caFile); err != nil {
					return err
				}
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
				Progress: m.progress, Reach: reach, Prove: prove})
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
	// These are serve's flags of the same names; serveSettings gives them to
	// serve's own flag set, which holds their values.
	f := cmd.Flags()
	f.String(configFlag, "", "read serve's settings from its config `FILE`, as serve --config does; a flag or a CIVNODE_* variable wins over it")
	f.String("data-dir", "", datadir.Help)
	f.String("addr", "127.0.0.1:7777", "the node's listen address HOST:PORT, as given to serve; https://HOST:PORT for a node that serves HTTPS (the name its certificate holds)")
	f.StringVar(&caFile, "ca-file", "", localnode.CAFileHelp)
	f.String("registry-url", localnode.DefaultRegistryURL, "the agent registry the node proxies (`URL`; \"\": none), as given to serve")
	f.BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	return cmd
}

// serveSettings are serve's flags as serve, run with doctor's environment,
// would see them: doctor's flags that serve shares (--config, --data-dir,
// --addr, --registry-url) as the command line gave them, then the CIVNODE_*
// variables and the config file, applied by serve's own applyServeSources to
// serve's own flag set, so that doctor checks the node serve would run and
// cannot drift from how serve reads its settings.
func (m *Main) serveSettings(cmd *cobra.Command, g *globals) (*pflag.FlagSet, error) {
	fs := newServeCommand(m, g).Flags()
	// The root's flags (--log-level, --log-format) are serve's settings too:
	// their variables are known, and the file may set them.
	fs.AddFlagSet(cmd.InheritedFlags())
	var errs []error
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Changed || fs.Lookup(f.Name) == nil {
			return
		}
		if err := fs.Set(f.Name, f.Value.String()); err != nil {
			errs = append(errs, usageErrorf("--%s: %v", f.Name, err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := m.applyServeSources(fs); err != nil {
		return nil, err
	}
	return fs, nil
}
