package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/projections"
)

// verifyCmd is civnode verify: an export bundle, or a stopped node's chain
// and store (or a stopped mirror's, with its origin's key).
type verifyCmd struct {
	m       *Main
	g       *globals
	dataDir string
}

func newVerifyCommand(m *Main, g *globals) *cobra.Command {
	c := &verifyCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "verify (FILE | - | --data-dir DIR)",
		Short: "Verify an export bundle or the local chain",
		Long:  verifyHelp,
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, err := m.logger(c.g)
			if err != nil {
				return err
			}
			dirSet := cmd.Flags().Changed("data-dir")
			switch {
			case dirSet && len(args) == 1:
				return usageErrorf("verify takes a bundle or --data-dir, not both")
			case dirSet:
				return c.store(cmd.Context(), logger)
			case len(args) == 1:
				return c.bundle(cmd.Context(), args[0])
			default:
				return usageErrorf("verify needs a bundle file, - for stdin, or --data-dir DIR")
			}
		},
	}
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", "verify the local chain in this data dir (the node must be stopped)")
	return cmd
}

// bundle verifies an export bundle read from path, or stdin for "-".
func (c *verifyCmd) bundle(ctx context.Context, path string) error {
	m := c.m
	r, progress, done, err := m.bundleInput("verify", path)
	if err != nil {
		return err
	}
	rep, err := eventlog.VerifyBundle(ctx, r, progress)
	done()
	if err != nil {
		return m.invalid(err)
	}
	checkpoint := ", no checkpoint"
	if rep.Checkpoint {
		// The tree's root, recomputed from the events, is the one the
		// bundle's signed checkpoint names (docs/transparency.md).
		checkpoint = ", checkpoint tree root " + base64.StdEncoding.EncodeToString(rep.TreeRoot[:])
	}
	_, err = fmt.Fprintf(m.Stdout, "ok: %d events, node %s, root %s, tip %s, export %s generated %s%s\n",
		rep.EventCount, rep.NodeDID, rep.RootHash, rep.TipHash, rep.ExportID, rep.GeneratedAt, checkpoint)
	return err
}

// store verifies the whole local chain of a stopped node, or of a stopped
// mirror with the key pinned in origin.vkey, and reads the rest of its store
// for damage.
func (c *verifyCmd) store(ctx context.Context, logger *slog.Logger) (err error) {
	m := c.m
	dir, err := datadir.Resolve(c.dataDir, m.Getenv, m.HomeDir)
	if err != nil {
		return err
	}
	chain, err := localnode.OpenChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		return fmt.Errorf("%w; verify an export instead: curl -sH \"Authorization: Bearer $(cat %s)\" http://HOST:PORT/v1/events/export | civnode verify -",
			err, dir.TokenPath())
	}
	if err != nil {
		return m.invalid(err)
	}
	defer func() {
		if cerr := chain.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	// A chain with state commitments is folded into a scratch log as it
	// verifies, to derive each committed root again.
	check, err := localnode.OpenChainCheck(chain, string(dir), logger)
	if err != nil {
		return m.invalid(err)
	}
	defer func() {
		if cerr := check.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	progress, done := m.progress("verify", int64(chain.Tip().Seq))
	rep, err := check.Verify(ctx, progress)
	done()
	if err != nil {
		return m.invalid(err)
	}
	// The chain is sound; a damaged block among the indexes or the read models
	// would still fail the node later, so every other byte is read too.
	if err := chain.CheckStore(ctx); err != nil {
		return m.invalid(err)
	}
	mirrored := ""
	states, err := check.States(ctx)
	var mismatch *projections.StateMismatch
	if errors.As(err, &mismatch) {
		fmt.Fprintf(m.Stdout, "invalid: %v\n", mismatch)
		return &reportedError{mismatch}
	}
	if err != nil {
		return err
	}
	if states > 0 {
		mirrored += fmt.Sprintf(", %d state commitments derived again and equal", states)
	}
	if chain.ReadOnly() {
		checked, err := checkMirrorCheckpoint(chain)
		if err != nil {
			return err
		}
		mirrored = checked + mirrored
	}
	// civnode doctor starts its check of the chain here next time. The chain
	// is valid whether or not the note is kept, so a failure to keep it is a
	// warning, not the verify's result.
	if _, err := chain.RecordVerified(rep, time.Now()); err != nil {
		logger.Warn("the chain verified, but its checkpoint for civnode doctor was not recorded", logkey.Err, err)
	}
	_, err = fmt.Fprintf(m.Stdout, "ok: %d events, node %s, root %s, tip %s%s\n",
		rep.Events, rep.NodeDID, rep.RootHash, rep.TipHash, mirrored)
	return err
}

// checkMirrorCheckpoint holds the origin's checkpoint a mirror's log keeps
// (with its seal, signed by the origin's key, which opening the log checked)
// to the mirror's own tree, which Verify held to the chain: a chain the
// origin signed, but not the one its checkpoint commits to, is a fork. It
// returns what the ok line adds for a mirror.
func checkMirrorCheckpoint(chain *eventlog.Log) (string, error) {
	const checked = "; a mirror: every event verifies with the origin's key in origin.vkey"
	head, _, err := chain.TreeCheckpoint()
	if errors.Is(err, eventlog.ErrNotFound) {
		return checked + ", and it holds no checkpoint of the origin yet", nil
	}
	if err != nil {
		return "", fmt.Errorf("the origin's checkpoint the mirror holds: %w", err)
	}
	root, err := chain.TreeRoot(head.Size)
	if err != nil {
		return "", fmt.Errorf("the origin's checkpoint the mirror holds, of %d events: %w", head.Size, err)
	}
	if root != head.Root {
		return "", fmt.Errorf("the origin's checkpoint the mirror holds is of the tree of %d events with root %s, but the mirror's tree of %d events has root %s: the origin signed another history than this chain",
			head.Size, base64.StdEncoding.EncodeToString(head.Root[:]), head.Size, base64.StdEncoding.EncodeToString(root[:]))
	}
	return fmt.Sprintf("%s, as does its checkpoint of tree size %d", checked, head.Size), nil
}

// invalid reports a chain or bundle that does not verify with one line on
// stdout naming the first bad seq; other errors pass through.
func (m *Main) invalid(err error) error {
	var ce *eventlog.ChainError
	if !errors.As(err, &ce) {
		return err
	}
	fmt.Fprintf(m.Stdout, "invalid: %v\n", ce)
	return &reportedError{err}
}
