package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/cmd/core"
)

// importCmd is civnode import: a data dir from an export bundle and the
// node key, every event verified.
type importCmd struct {
	m                           *Main
	g                           *globals
	dataDir, keyFile, published string
}

func newImportCommand(m *Main, g *globals) *cobra.Command {
	c := &importCmd{m: m, g: g}
	cmd := &cobra.Command{
		Use:   "import BUNDLE --key KEYFILE --data-dir NEW",
		Short: "Make a data dir from an export bundle and the node key, every event verified",
		Long:  importHelp,
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.keyFile == "" {
				return usageErrorf("--key is required: the node.key of the node that signed the bundle")
			}
			if err := requireTargetDataDir(c.dataDir); err != nil {
				return err
			}
			return c.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&c.dataDir, "data-dir", "", targetDataDirHelp)
	cmd.Flags().StringVar(&c.keyFile, "key", "", "the node key (PKCS#8 PEM, a node.key) of the node that signed the bundle")
	cmd.Flags().StringVar(&c.published, "published", "", publishedHelp)
	return cmd
}

func (c *importCmd) run(ctx context.Context, src string) (err error) {
	m := c.m
	logger, err := m.logger(c.g)
	if err != nil {
		return err
	}
	key, err := datadir.LoadNodeKey(c.keyFile, logger)
	if err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	dir, undo, err := newTargetDataDir(c.dataDir)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, undo())
		}
	}()
	if err := datadir.WriteNodeKey(dir.KeyPath(), key); err != nil {
		return err
	}
	n, err := localnode.Open(ctx, dir, key, core.Config{Keys: localnode.Keystore(dir)}, logger, localnode.Hooks{Ingest: true})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := n.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close event log: %w", cerr)
		}
	}()
	in, progress, done, err := m.bundleInput("import", src)
	if err != nil {
		return err
	}
	rep, err := n.Log.ImportBundle(ctx, in, progress)
	done()
	if err != nil {
		return m.invalid(err)
	}
	fmt.Fprintf(m.Stdout, "imported %d events into %s\nnode      %s\ntip       seq %d, %s\n", rep.EventCount, dir, rep.NodeDID, rep.EventCount, rep.TipHash)
	if err := localnode.AdoptPromotedInstance(n.Log, dir); err != nil {
		return err
	}
	if err := catchUpPublished(ctx, m.Stdout, m.Stderr, n.Log, dir, c.published); err != nil {
		return err
	}
	return markRecovered(dir, datadir.RecoveredByImport)
}
