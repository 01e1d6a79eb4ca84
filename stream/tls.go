package stream

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/civnode/civnode/internal/logkey"
)

// CertPoll is how often the port's certificate files are looked at: a renewed
// certificate is served to new connections within about this long.
const CertPoll = 250 * time.Millisecond

// portCert is the Listen port's certificate and key, loaded from their files
// and loaded again when either file changes (its modification time or size).
// New TLS handshakes get the current pair; open connections keep theirs, so
// a renewal by certbot or an ACME client needs no restart and drops no
// observer. A pair that does not load (a key that is not the certificate's,
// or files caught half-written) is not taken: the old pair stays, with a
// warning, and is tried again once a file changes again.
type portCert struct {
	certFile, keyFile string
	log               *slog.Logger
	current           atomic.Pointer[tls.Certificate]
	seen              [2]fileStamp  // of the files last tried, loaded or not
	force             chan struct{} // a reload asked for (Server.ReloadTLS), changed files or not
}

// fileStamp tells whether a file changed since it was last looked at.
type fileStamp struct {
	mod  time.Time
	size int64
}

// newPortCert loads the pair, or says why it cannot be served.
func newPortCert(certFile, keyFile string, log *slog.Logger) (*portCert, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: a certificate needs its key and a key its certificate", ErrTLSFiles)
	}
	c := &portCert{certFile: certFile, keyFile: keyFile, log: log, force: make(chan struct{}, 1)}
	c.seen = c.stamps()
	cert, err := c.load()
	if err != nil {
		return nil, err
	}
	c.current.Store(cert)
	return c, nil
}

func (c *portCert) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate %s with key %s: %w", ErrTLSFiles, c.certFile, c.keyFile, err)
	}
	return &cert, nil
}

// stamps looks at both files; one that cannot be read has a zero stamp.
func (c *portCert) stamps() [2]fileStamp {
	var s [2]fileStamp
	for i, name := range []string{c.certFile, c.keyFile} {
		if fi, err := os.Stat(name); err == nil {
			s[i] = fileStamp{mod: fi.ModTime(), size: fi.Size()}
		}
	}
	return s
}

// config is the port's tls.Config: Go's defaults from TLS 1.2 on, and the
// current pair at each handshake.
func (c *portCert) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.current.Load(), nil }}
}

// reload loads the pair again if forced or if a file changed since the
// last try; a pair that fails is tried again only once a file changes again
// (or when forced), so a bad pair is logged once.
func (c *portCert) reload(force bool) {
	now := c.stamps()
	if !force && now == c.seen {
		return
	}
	c.seen = now
	cert, err := c.load()
	if err != nil {
		c.log.Warn("nats TLS certificate not reloaded; serving the previous one", logkey.Err, err)
		return
	}
	c.current.Store(cert)
	c.log.Info("nats TLS certificate reloaded", logkey.File, c.certFile)
}

// watch reloads every CertPoll until stop closes; without a certificate it
// only waits.
func (c *portCert) watch(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	if c == nil {
		<-stop
		return
	}
	t := time.NewTicker(CertPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.reload(false)
		case <-c.force:
			c.reload(true)
		}
	}
}

// ReloadTLS loads the port's certificate and key again, whether or not the
// files changed (serve does on SIGHUP), as the next poll does for changed
// files; without TLS it does nothing. It returns at once.
func (s *Server) ReloadTLS() {
	if s.cert == nil {
		return
	}
	select {
	case s.cert.force <- struct{}{}:
	default: // one is already asked for
	}
}
