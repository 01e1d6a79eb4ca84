package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/transparency"
)

func (m *Main) newTransparencyCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transparency",
		Short: "Publish the chain's Merkle tree as static tiles, check a node's checkpoints, prove an event's inclusion",
		Long: `The node keeps an RFC 9162 Merkle tree over its chain and signs checkpoints of
it with its key (docs/transparency.md). These commands are the
tree's operator's and observers' tools:

  publish   write the tree's C2SP tlog-tiles (hash tiles and the signed
            checkpoint) to a directory for a static host or CDN
  check     fetch a node's checkpoint, verify it and prove it consistent with
            the one stored from the last run: detects a fork, a rollback or a
            change of key
  prove     print the proof that one event is in the tree, as one JSON object
            that can be checked offline

publish and prove work with the node up (through its API, as token does) or
down (on the data dir). check, and prove with --token, are observers' commands
that need only a node's URL and an owner or observer token.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		m.newTransparencyPublishCommand(g),
		m.newTransparencyCheckCommand(g),
		m.newTransparencyProveCommand(g),
	)
	return cmd
}

// tokenEnv holds the token of check and prove when --token is not given, so
// that it need not appear in the process list.
const tokenEnv = "CIVNODE_TOKEN"

// observerToken is --token, else $CIVNODE_TOKEN.
func (m *Main) observerToken(flag string) string {
	if flag != "" {
		return flag
	}
	return m.Getenv(tokenEnv)
}

// openLocalSource opens the tree of the node of a data dir: through the
// running node's API when one holds the data dir (reached as token and
// wallet reach it, nodechannel.go), else the log itself. The caller calls
// closeFn.
func (m *Main) openLocalSource(ctx context.Context, logger *slog.Logger, dataDirFlag, addr string) (src transparency.Source, closeFn func() error, err error) {
	dir, err := datadir.Resolve(dataDirFlag, m.Getenv, m.HomeDir)
	if err != nil {
		return nil, nil, err
	}
	l, err := openChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := openNodeChannel(ctx, dir, addr, logger)
		if err != nil {
			return nil, nil, err
		}
		logger.Debug("a node runs on the data dir; reading its tree through its API", "via", ch.Via)
		c := transparency.NewClient(ch.HTTP, ch.Base, ch.Token, ch.Via)
		return transparency.APISource(c), func() error { ch.Close(); return nil }, nil
	}
	if err != nil {
		return nil, nil, err
	}
	closeFn = func() error {
		if err := l.Close(); err != nil {
			return fmt.Errorf("close event log: %w", err)
		}
		return nil
	}
	return transparency.WitnessedLogSource(l, string(dir), dir.CosignaturesPath()), closeFn, nil
}

// observerClient is a client of the node at addr with token; an address it
// cannot use is a mistake on the command line.
func observerClient(addr, token string) (*transparency.Client, error) {
	c, err := transparency.NewObserverClient(addr, token)
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}
