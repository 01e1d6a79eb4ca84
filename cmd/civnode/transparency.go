package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/transparency"
)

func newTransparencyCommand(m *Main, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transparency",
		Short: "Publish the chain's Merkle tree as static tiles, check a node's checkpoints, prove an event's inclusion",
		Long:  transparencyHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newTransparencyPublishCommand(m, g),
		newTransparencyCheckCommand(m, g),
		newTransparencyProveCommand(m, g),
	)
	return cmd
}

// tokenEnv holds the token of check and prove when --token is not given, so
// that it need not appear in the process list.
const tokenEnv = "CIVNODE_TOKEN"

// observerToken is --token, else $CIVNODE_TOKEN.
func observerToken(getenv func(string) string, flag string) string {
	if flag != "" {
		return flag
	}
	return getenv(tokenEnv)
}

// proveToken is the token a prove command asks a node at --addr with: the
// flag's, else $CIVNODE_TOKEN, and none when --data-dir is given (the
// node of the data dir is asked as its owner); both flags are a mistake.
func proveToken(cmd *cobra.Command, getenv func(string) string, flag string) (string, error) {
	switch {
	case flag != "" && cmd.Flags().Changed("data-dir"):
		return "", usageErrorf("give --token to ask a node at --addr, or --data-dir, not both")
	case cmd.Flags().Changed("data-dir"):
		return "", nil
	}
	// An explicit --data-dir wins over a token in the environment.
	return observerToken(getenv, flag), nil
}

// openSource opens the tree of the node of the data dir dataDirFlag names
// (localnode.OpenSource). The caller calls closeFn.
func openSource(ctx context.Context, m *Main, logger *slog.Logger, dataDirFlag, addr string) (src transparency.Source, closeFn func() error, err error) {
	dir, err := datadir.Resolve(dataDirFlag, m.Getenv, m.HomeDir)
	if err != nil {
		return nil, nil, err
	}
	return localnode.OpenSource(ctx, dir, addr, logger)
}

// observerClient is a client of the node at addr with token, trusting the
// CAs of caFile (--ca-file) besides the system's for https://; an address
// it cannot use is a mistake on the command line.
func observerClient(addr, token, caFile string) (*transparency.Client, error) {
	tlsConfig, err := localnode.ClientTLS(caFile)
	if err != nil {
		return nil, err
	}
	c, err := transparency.NewObserverClient(addr, token, transparency.WithTLSConfig(tlsConfig))
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}
