package localnode

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/civnode/civnode/internal/logkey"
)

// TLS is serve's HTTPS (docs/deploying.md, Direct TLS): the certificate
// and key files, reloaded as they change (certReloader), and the CA bundle
// that client certificates must chain to, if any. Without CertFile the node
// serves plain HTTP, which on an address that is not loopback it does only
// with AllowPlainHTTP (behind a proxy that terminates TLS, say).
type TLS struct {
	CertFile, KeyFile string
	ClientCAFile      string
	AllowPlainHTTP    bool
}

// Enabled says whether the node serves HTTPS.
func (t TLS) Enabled() bool { return t.CertFile != "" }

// Scheme is the URL scheme the node serves: https or http.
func (t TLS) Scheme() string {
	if t.Enabled() {
		return "https"
	}
	return "http"
}

// check refuses a certificate without its key (or the reverse), client
// certificates without HTTPS, and plain HTTP beyond loopback unless it is
// allowed, which it then warns of at each start.
func (t TLS) check(addr string, logger *slog.Logger) error {
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", ErrTLSFiles)
	case t.ClientCAFile != "" && !t.Enabled():
		return fmt.Errorf("%w: --tls-client-ca needs --tls-cert and --tls-key", ErrTLSFiles)
	case t.Enabled() || isLoopback(addr):
		return nil
	case !t.AllowPlainHTTP:
		return fmt.Errorf("%w: --addr %s; serve HTTPS with --tls-cert and --tls-key, or, behind a proxy that terminates TLS, give --allow-plain-http", ErrPlainHTTP, addr)
	}
	logger.Warn("serving plain HTTP on an address that is not loopback (--allow-plain-http): tokens and events cross the network unencrypted unless a proxy in front terminates TLS", logkey.Addr, addr)
	return nil
}

// isLoopback says whether the listen address addr (HOST:PORT) is on
// loopback only: 127.0.0.0/8, ::1 or localhost. An empty host listens on
// every interface; any other name may resolve beyond loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// config is the node's tls.Config: Go's defaults (TLS 1.2 and later), the
// current pair of r, and client certificates verified against the CA file
// if one is given.
func (t TLS) config(r *certReloader) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: --tls-client-ca %s holds no PEM certificate", ErrTLSFiles, t.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}
