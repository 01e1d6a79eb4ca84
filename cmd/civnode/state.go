package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/internal/atomicfile"
	"github.com/civnode/civnode/transparency"
	"github.com/civnode/civnode/witness"
)

func newStateCommand(m *Main, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Prove one record of the node's state map, and check such a proof offline",
		Long:  stateHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newStateProveCommand(m, g), newStateVerifyCommand(m))
	return cmd
}

// stateProveCmd is civnode state prove: a node's answer of GET
// /v1/state/proof, checked and written to a file.
type stateProveCmd struct {
	m       *Main
	g       *globals
	addr    string
	token   string
	dataDir string
	caFile  string
	out     string
}

func newStateProveCommand(m *Main, g *globals) *cobra.Command {
	cfg := &stateProveCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "prove KEY [--addr URL --token T | --data-dir DIR] [--ca-file F] [--out FILE]",
		Short: "Write the node's proof of one record (or its absence) under its signed state root, checkable offline",
		Long:  stateProveHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if kind, id, ok := strings.Cut(key, "/"); !ok || kind == "" || id == "" {
				return usageErrorf("KEY %q: want <kind>/<id>, such as identity/<agent_did> or mission/<mission_id>", key)
			}
			token, err := proveToken(cmd, m.Getenv, cfg.token)
			if err != nil {
				return err
			}
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			return cfg.run(cmd.Context(), logger, token, key)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.addr, "addr", "127.0.0.1:7777", "the node: its URL with --token, else HOST:PORT of the node running on --data-dir")
	f.StringVar(&cfg.token, "token", "", "a token of the node at --addr that may read the record, the owner's or an agent's (default $"+tokenEnv+")")
	f.StringVar(&cfg.dataDir, "data-dir", "", datadir.Help)
	f.StringVar(&cfg.caFile, "ca-file", "", localnode.CAFileHelp)
	f.StringVar(&cfg.out, "out", "", "write the proof to `FILE` (replaced atomically) instead of standard output, and print the ok line")
	return cmd
}

func (cfg *stateProveCmd) run(ctx context.Context, logger *slog.Logger, token, key string) error {
	m := cfg.m
	var c *transparency.Client
	if token != "" {
		var err error
		if c, err = observerClient(cfg.addr, token, cfg.caFile); err != nil {
			return err
		}
	} else {
		dir, err := datadir.Resolve(cfg.dataDir, m.Getenv, m.HomeDir)
		if err != nil {
			return err
		}
		if _, err := os.Stat(dir.SocketPath()); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no node runs on %s (it has no %s): state prove asks a running node; start it with civnode serve, or give --addr and --token of a node",
				dir, filepath.Base(dir.SocketPath()))
		}
		ch, err := localnode.Dial(ctx, dir, cfg.addr, logger, localnode.WithCAFile(cfg.caFile))
		if err != nil {
			return err
		}
		defer ch.Close()
		c = transparency.NewClient(ch.HTTP, ch.Base, ch.Token, ch.Via)
	}
	defer c.Close()
	answer, err := transparency.FetchStateProof(ctx, c, key)
	if err != nil {
		return err
	}
	// The node states its key in the answer: checking with it shows the
	// answer whole and self-consistent, not that the key is the one to
	// trust, which state verify --verifier-key takes from the verifier.
	sp, err := transparency.ParseStateProof(answer)
	if err != nil {
		return fmt.Errorf("the answer of %s: %w", c.Via(), err)
	}
	k, err := transparency.ParseKey(sp.Commitment.VerifierKey)
	if err != nil {
		return fmt.Errorf("the answer of %s: %w: %w", c.Via(), transparency.ErrBadStateProof, err)
	}
	v, err := sp.Verify(k, transparency.StateVerifyOptions{VerifierKey: k.VerifierKey, Key: key})
	if err != nil {
		return fmt.Errorf("the answer of %s: %w", c.Via(), err)
	}
	if !strings.HasSuffix(string(answer), "\n") {
		answer = append(answer, '\n')
	}
	if cfg.out == "" {
		_, err = m.Stdout.Write(answer)
		return err
	}
	if err := atomicfile.Replace(cfg.out, "", answer, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", cfg.out, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(cfg.out)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "%s; written to %s (checked with the key the node states, %s)\n", okLine(v), cfg.out, k.VerifierKey)
	return err
}

// stateVerifyCmd is civnode state verify: the offline check of a state
// proof.
type stateVerifyCmd struct {
	m           *Main
	verifierKey string
	key         string
	witnesses   []string
	quorum      int
	maxAge      time.Duration
}

func newStateVerifyCommand(m *Main) *cobra.Command {
	cfg := &stateVerifyCmd{m: m}
	cmd := &cobra.Command{
		Use:   "verify FILE --verifier-key VKEY [--key KEY] [--witness WVKEY … --quorum K]",
		Short: "Check a state proof offline: the record under the root, the commitment's signature and inclusion, the checkpoint's signatures",
		Long:  stateVerifyHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.verifierKey == "" {
				return usageErrorf("state verify needs --verifier-key VKEY, the node's key as you trust it (civnode transparency check prints and stores it)")
			}
			if _, err := transparency.ParseKey(cfg.verifierKey); err != nil {
				return usageErrorf("--verifier-key: %v", err)
			}
			for _, w := range cfg.witnesses {
				if _, err := witness.NewCosignatureVerifier(w); err != nil {
					return usageErrorf("--witness: %v", err)
				}
			}
			if cfg.quorum < 1 || len(cfg.witnesses) > 0 && cfg.quorum > len(cfg.witnesses) {
				return usageErrorf("--quorum must be from 1 to the number of --witness flags")
			}
			if cfg.maxAge < 0 {
				return usageErrorf("--max-age must not be negative")
			}
			return cfg.run(args[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.verifierKey, "verifier-key", "", "the node's note verifier key `VKEY` as you trust it: the checkpoint and the commitment must be signed by it (required)")
	f.StringVar(&cfg.key, "key", "", "refuse a proof of another `KEY` than this one")
	f.StringArrayVar(&cfg.witnesses, "witness", nil, "require cosignatures by the witness with this cosignature/v1 verifier key `WVKEY` (repeatable; docs/transparency.md)")
	f.IntVar(&cfg.quorum, "quorum", 1, "how many --witness cosignatures the checkpoint needs")
	f.DurationVar(&cfg.maxAge, "max-age", 0, "the oldest cosignature accepted (default: any age, for a proof checked long after it was made)")
	return cmd
}

func (cfg *stateVerifyCmd) run(file string) error {
	m := cfg.m
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(m.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return fmt.Errorf("read the proof: %w", err)
	}
	v, err := transparency.VerifyStateProof(data, transparency.StateVerifyOptions{VerifierKey: cfg.verifierKey, Key: cfg.key,
		Witnesses: cfg.witnesses, Quorum: cfg.quorum, MaxAge: cfg.maxAge})
	if err != nil {
		if !errors.Is(err, transparency.ErrBadStateProof) {
			return err
		}
		why, _ := strings.CutPrefix(err.Error(), transparency.ErrBadStateProof.Error()+": ")
		fmt.Fprintf(m.Stdout, "invalid: %s\n", why)
		return &reportedError{err}
	}
	_, err = fmt.Fprintln(m.Stdout, okLine(v))
	return err
}

// okLine is the line that says what a verified state proof shows.
func okLine(v transparency.StateVerified) string {
	line := fmt.Sprintf("ok: %s = %s through seq %d, root %s, in the tree of %d events signed by %s",
		v.Key, shortValue(v.Value), v.ThroughSeq, v.StateRoot, v.TreeSize, v.Origin)
	if v.Witnesses > 0 {
		line += fmt.Sprintf(", witnessed by %d of %d", v.Cosigned, v.Witnesses)
	}
	return line
}

// shortValueRunes bounds the value an ok line shows: a record can be long,
// and the file holds it whole.
const shortValueRunes = 60

// shortValue is a record's JCS text, cut to shortValueRunes, or "absent".
func shortValue(value []byte) string {
	if value == nil {
		return "absent"
	}
	s := string(value)
	if utf8.RuneCountInString(s) <= shortValueRunes {
		return s
	}
	r := []rune(s)
	return string(r[:shortValueRunes-1]) + "…"
}
