package localnode

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
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
