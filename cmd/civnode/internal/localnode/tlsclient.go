package localnode

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/doctor"
)

// CAFileHelp is the help of --ca-file of the commands that talk to a node.
const CAFileHelp = "trust the CA certificates in the PEM `FILE` for a node's https:// URL, besides the system's (a node with its own CA; docs/deploying.md)"

// ClientTLS is the TLS configuration of the CLI's connections to a node
// over https://: the system's roots and, added to them, the certificates of
// the PEM bundle caFile, so that one flag serves a node with a private CA
// and one with a public certificate alike. For caFile "" it is nil: Go's
// defaults, the system's roots alone.
func ClientTLS(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system roots here: the bundle alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: --ca-file %s holds no PEM certificate", ErrTLSFiles, caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// DoctorOverTLS are doctor's ways to a node that serves HTTPS at host
// (HOST:PORT; doctor --addr https://HOST:PORT), for doctor.Options: Reach
// as Reach, with the channel's TCP way inside TLS; Prove as ProveConn,
// once TLS is set up on the connection doctor dialed. The node is verified
// against the system's roots and those of caFile.
func DoctorOverTLS(host, caFile string) (
	reach func(context.Context, datadir.Dir, string) (doctor.Node, error),
	prove func(context.Context, net.Conn, string, ed25519.PublicKey, string) (doctor.Node, error),
	err error,
) {
	config, err := channelTLS(host, caFile)
	if err != nil {
		return nil, nil, err
	}
	reach = func(ctx context.Context, dir datadir.Dir, addr string) (doctor.Node, error) {
		ch, err := Dial(ctx, dir, "https://"+addr, slog.New(slog.DiscardHandler), WithCAFile(caFile))
		if err != nil {
			return nil, err
		}
		return channelNode{ch}, nil
	}
	prove = func(ctx context.Context, conn net.Conn, addr string, pub ed25519.PublicKey, token string) (doctor.Node, error) {
		tc := tls.Client(conn, config)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		return ProveConn(ctx, tc, addr, pub, token)
	}
	return reach, prove, nil
}
