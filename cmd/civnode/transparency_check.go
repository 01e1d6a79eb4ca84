package main

import (
	"time"

	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/transparency"
)

// monitorCmd is civnode transparency check: a monitor of a node's
// transparency log.
type monitorCmd struct {
	m           *Main
	addr        string
	tiles       string
	token       string
	state       string
	verifierKey string
	witnesses   []string
	quorum      int
	maxAge      time.Duration
	json        bool
	verbose     bool
	caFile      string
}

func newTransparencyCheckCommand(m *Main, _ *globals) *cobra.Command {
	cfg := &monitorCmd{m: m}
	cmd := &cobra.Command{
		Use:   "check (--addr URL --token T | --tiles URL) --state FILE [--verifier-key VKEY]",
		Short: "Verify a node's signed checkpoint and that its log only grew since the last check",
		Long:  transparencyCheckHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.state == "" {
				return usageErrorf("transparency check needs --state FILE, where it keeps the last verified checkpoint")
			}
			var host transparency.Host
			var c *transparency.Client
			var err error
			if cfg.tiles != "" {
				if cmd.Flags().Changed("addr") || cmd.Flags().Changed("token") {
					return usageErrorf("give --tiles URL of a static host, or --addr and --token of a node, not both")
				}
				// A static host is public: it is sent no token.
				if c, err = observerClient(cfg.tiles, "", cfg.caFile); err != nil {
					return err
				}
				host = transparency.TilesHost(c)
			} else {
				token := observerToken(m.Getenv, cfg.token)
				if token == "" {
					return usageErrorf("transparency check needs an owner or observer token: --token T or $%s", tokenEnv)
				}
				if c, err = observerClient(cfg.addr, token, cfg.caFile); err != nil {
					return err
				}
				host = transparency.NodeHost(c)
				if len(cfg.witnesses) > 0 {
					host = transparency.WitnessedNodeHost(c)
				}
			}
			if cfg.quorum < 1 || len(cfg.witnesses) > 0 && cfg.quorum > len(cfg.witnesses) {
				return usageErrorf("--quorum must be from 1 to the number of --witness flags")
			}
			defer c.Close()
			rep, err := transparency.Check(cmd.Context(), host, c.Base(), transparency.CheckOptions{State: cfg.state, VerifierKey: cfg.verifierKey,
				Witnesses: cfg.witnesses, Quorum: cfg.quorum, MaxAge: cfg.maxAge})
			rep.BytesTransferred = c.Transferred()
			return cfg.print(c.Via(), rep, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node's URL, or HOST:PORT")
	f.StringVar(&cfg.tiles, "tiles", "", "check the log a static host serves at this URL prefix (what publish writes) instead of a node")
	f.StringVar(&cfg.token, "token", "", "an owner or observer token of the node (default $"+tokenEnv+")")
	f.StringVar(&cfg.caFile, "ca-file", "", localnode.CAFileHelp)
	f.StringVar(&cfg.state, "state", "", "file holding the verifier key and the last verified checkpoint (created by the first run, mode 0600)")
	f.StringVar(&cfg.verifierKey, "verifier-key", "", "the node's note verifier key to expect, instead of trusting the first one seen")
	f.StringArrayVar(&cfg.witnesses, "witness", nil, "require cosignatures by the witness with this cosignature/v1 verifier key `VKEY` (repeatable; docs/transparency.md)")
	f.IntVar(&cfg.quorum, "quorum", 1, "how many --witness cosignatures a checkpoint needs")
	f.DurationVar(&cfg.maxAge, "max-age", transparency.DefaultMaxAge, "the oldest cosignature accepted")
	f.BoolVar(&cfg.json, "json", false, "print one JSON object instead of a line")
	f.BoolVarP(&cfg.verbose, "verbose", "v", false, "also print the bytes transferred")
	return cmd
}

// print prints the report, a line or a JSON object, and returns the error
// that makes the exit status.
func (cfg *monitorCmd) print(via string, rep transparency.Report, err error) error {
	m := cfg.m
	if err != nil && rep.Result == "" {
		rep.Result = "error"
	}
	if err != nil {
		rep.Error = err.Error()
	}
	if cfg.json {
		enc := json.NewEncoder(m.Stdout)
		if perr := enc.Encode(rep); perr != nil && err == nil {
			return fmt.Errorf("print the report: %w", perr)
		}
		return err
	}
	if err != nil {
		if cfg.verbose {
			fmt.Fprintf(m.Stderr, "%d bytes transferred\n", rep.BytesTransferred)
		}
		return fmt.Errorf("transparency check of %s: %w", via, err)
	}
	line := summaryLine(rep)
	if cfg.verbose {
		line += fmt.Sprintf(" (%d bytes transferred)", rep.BytesTransferred)
	}
	_, perr := fmt.Fprintln(m.Stdout, line)
	return perr
}

func summaryLine(rep transparency.Report) string {
	switch rep.Result {
	case "trusted":
		return fmt.Sprintf("trusted %s on first use: tree size %d, root %s; key %s stored", rep.Origin, rep.TreeSize, rep.RootHash, rep.VerifierKey)
	case "unchanged":
		return fmt.Sprintf("unchanged: %s tree size %d, root %s", rep.Origin, rep.TreeSize, rep.RootHash)
	default:
		return fmt.Sprintf("consistent: %s tree size %d → %d, root %s", rep.Origin, rep.OldSize, rep.TreeSize, rep.RootHash)
	}
}
