package main

import (
	"time"

	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

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
}

func newTransparencyCheckCommand(m *Main, _ *globals) *cobra.Command {
	cfg := &monitorCmd{m: m}
	cmd := &cobra.Command{
		Use:   "check (--addr URL --token T | --tiles URL) --state FILE [--verifier-key VKEY]",
		Short: "Verify a node's signed checkpoint and that its log only grew since the last check",
		Long: `check is a monitor of a node's transparency log. Its first run fetches the node's
verifier key and checkpoint (GET /v1/transparency), verifies the checkpoint's
signature and stores both in --state. The key is trusted on first use, unless
--verifier-key pins the one to expect.

Each later run fetches only the new checkpoint (GET /v1/transparency/checkpoint)
and one consistency proof from the stored tree (GET
/v1/transparency/proof/consistency), a few kilobytes whatever the log's size,
verifies the checkpoint with the stored key and the proof, and stores the new
checkpoint. It exits 1, naming the problem, when

  the checkpoint is signed by another key    a different node, or a new key
  the log rolled back                         a smaller tree than the stored one
  the log forked                              the same size with another root, or a
                                              larger tree that does not extend the
                                              stored one
  not witnessed                               with --witness: fewer than --quorum
                                              valid cosignatures of those keys, each
                                              no older than --max-age (default 24h)

and then keeps the stored checkpoint and writes what it was served beside the
state file, in a new file FILE.evidence-<UTC time>-<problem>.json that no
later run replaces: two checkpoints of one key that disagree are proof of the
fork for anyone.

  civnode transparency check --addr https://node.example --state node.json

With --tiles URL instead of --addr, check reads a log that a static host
serves from what publish wrote: URL/checkpoint, URL/verifier-key on the first
run, and the hash tiles it needs to compute the consistency proof itself,
each checked against the new checkpoint's root. A static host takes no token.

The token, an owner or observer token, comes from --token or $CIVNODE_TOKEN.
It prints one line on success; -v adds the bytes transferred, --json prints
one JSON object instead (also on failure). Exit status: 0 consistent, 1 a
problem or any other failure, 2 a mistake on the command line.`,
		Args: usageArgs(cobra.NoArgs),
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
				if c, err = observerClient(cfg.tiles, ""); err != nil {
					return err
				}
				host = transparency.TilesHost(c)
			} else {
				token := observerToken(m.Getenv, cfg.token)
				if token == "" {
					return usageErrorf("transparency check needs an owner or observer token: --token T or $%s", tokenEnv)
				}
				if c, err = observerClient(cfg.addr, token); err != nil {
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
