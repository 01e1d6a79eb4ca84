package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/commands/servicenet"
	civhttp "github.com/civnode/civnode/http"
)

func newDoctorCommand(m *Main, g *globals) *cobra.Command {
	var dataDirFlag, addrFlag, registryURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a node's data dir, chain, port and registry, and say how to fix what is wrong",
		Long: `doctor checks what a node needs, one line per check, and for each problem
prints what to do about it:

  data_dir             exists, is a directory, mode 0700, owned by you
  db                   the event log's database is there
  node_key             node.key: mode 0600, owned by you, an Ed25519 key
  control_token        control.token: mode 0600, owned by you, one token line
  registry_credential  registry.credential, if there: mode 0600, one line
  wallets              wallets/*.key, if any: mode 0600, valid keys
  disk                 free space where the data dir is
  chain                the chain verifies from the last full verify to the tip
  read_models          the read models are the tip's, in this version's layout
  node                 a running node answers, is healthy and takes control.token
  port                 --addr is free, or served by this data dir's node
  registry             --registry-url answers GET /v1/agents within 5 s;
                       with --registry-url "" (no registry) it says so and passes

The chain check starts where the last civnode verify --data-dir ended, which
it recorded in the store: the event there must be unchanged, and every event
after it, and the genesis event, must verify. Without such a record it checks
the newest 4096 events and the genesis event. While a node runs it holds the
store; doctor then asks the node instead, over control.sock, or over TCP at
--addr once the node there has proved it holds node.key.

doctor records nothing in the store (no event, audit entry or checkpoint),
and never prints a key, token or credential. A registry that cannot be
reached is a warning: the node runs without it, and only the registry routes
fail.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 a
mistake on the command line. --json prints the report as one JSON object
(docs/doctor.md).`,
		Args: usageArgs(cobra.NoArgs),
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
				Progress: m.progress, Reach: reachNode, Prove: proveNodeConn})
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

// channelNode is the node channel as doctor asks a running node.
type channelNode struct{ ch *civhttp.Client }

// reachNode opens the owner's channel to the node running on dir, without
// logging how it got there.
func reachNode(ctx context.Context, dir datadir.Dir, addr string) (doctor.Node, error) {
	ch, err := localnode.Dial(ctx, dir, addr, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	return channelNode{ch}, nil
}

// proveNodeConn has the process on conn prove it holds pub's key, and then
// makes a channel of conn alone.
func proveNodeConn(ctx context.Context, conn net.Conn, addr string, pub ed25519.PublicKey, token string) (doctor.Node, error) {
	if err := civhttp.ProveNode(ctx, conn, addr, pub); err != nil {
		return nil, err
	}
	fail := func(context.Context) (net.Conn, error) { return nil, errors.New("one proven connection is enough") }
	return channelNode{civhttp.NewClient("http://"+addr, token, addr, conn, fail)}, nil
}

func (n channelNode) Via() string { return n.ch.Via }
func (n channelNode) Close()      { n.ch.Close() }

// Get makes one GET through the channel and returns the status and body.
func (n channelNode) Get(ctx context.Context, path string, owner bool) (int, []byte, error) {
	var req *http.Request
	var err error
	if owner {
		req, err = n.ch.NewRequest(ctx, http.MethodGet, path, nil)
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, n.ch.Base+path, nil)
	}
	if err != nil {
		return 0, nil, err
	}
	resp, err := n.ch.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read the answer to GET %s: %w", path, err)
	}
	return resp.StatusCode, body, nil
}
