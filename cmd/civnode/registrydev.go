package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/commands/servicenet/registrydev"
	"github.com/civnode/civnode/internal/logkey"
)

// newRegistryDevCommand is civnode registry-dev: a stand-in agent registry on
// loopback, for trying the registry proxy on one machine (registrydev).
func newRegistryDevCommand(m *Main, g *globals) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "registry-dev",
		Short: "Serve a stand-in agent registry on this machine, for trying the registry proxy offline",
		Long:  registryDevHelp,
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := m.logger(g)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", loopbackUnlessNamed(addr))
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			base := "http://" + ln.Addr().String()
			srv := &http.Server{Handler: registrydev.New(registrydev.Options{BaseURL: base, Logger: logger}),
				ReadHeaderTimeout: 10 * time.Second}
			if _, err := fmt.Fprintf(m.Stdout, "civnode registry-dev listening on %s\n", base); err != nil {
				ln.Close()
				return fmt.Errorf("print listening line: %w", err)
			}
			logger.Info("a stand-in registry: start a node with --registry-url "+base, logkey.Agents, "summarizer deep-research market-data calendar")
			ctx := cmd.Context()
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return fmt.Errorf("shut down: %w", err)
			}
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7790", "listen address HOST:PORT; with no HOST (:PORT) it is 127.0.0.1, loopback (0.0.0.0:PORT: every interface)")
	return cmd
}

// loopbackUnlessNamed is addr with an empty host made 127.0.0.1. The
// stand-in serves any node that signs and approves every OAuth request, so it
// is for this machine: it listens beyond loopback only on a host named for
// that, never because the host was left out, which net.Listen takes for
// every interface.
func loopbackUnlessNamed(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr // net.Listen reports a malformed one
	}
	return net.JoinHostPort("127.0.0.1", port)
}
