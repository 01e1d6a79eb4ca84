package localnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/civnode/civnode/internal/logkey"
)

// certPollInterval is how often a certReloader looks at its files: a
// renewed certificate is served within about this long.
const certPollInterval = 250 * time.Millisecond

// certReloader holds a certificate and its key, loaded from their files,
// and loads them again when either file changes (its modification time or
// size, polled) or the process gets SIGHUP. New TLS handshakes get the
// current pair (GetCertificate); open connections keep theirs, so a renewal
// by certbot or an ACME client needs no restart and drops nothing. A pair
// that does not load (a key that does not match the certificate, or files
// caught half-written) is not taken: the old pair stays, with a warning.
type certReloader struct {
	certFile, keyFile string
	logger            *slog.Logger
	current           atomic.Pointer[tls.Certificate]
	seen              fileStamps // of the files last tried, loaded or not
}

// fileStamps tell whether the files changed since they were last looked at.
type fileStamps [2]struct {
	mod  time.Time
	size int64
}

// newCertReloader loads the pair, or says why it cannot be served.
func newCertReloader(certFile, keyFile string, logger *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, logger: logger}
	r.seen = r.stamps()
	cert, err := r.load()
	if err != nil {
		return nil, err
	}
	r.current.Store(cert)
	return r, nil
}

// load reads and checks the pair: the key must be the certificate's.
func (r *certReloader) load() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: --tls-cert %s with --tls-key %s: %w", ErrTLSFiles, r.certFile, r.keyFile, err)
	}
	return &cert, nil
}

// stamps looks at both files; one that cannot be read has a zero stamp.
func (r *certReloader) stamps() fileStamps {
	var s fileStamps
	for i, name := range []string{r.certFile, r.keyFile} {
		if fi, err := os.Stat(name); err == nil {
			s[i].mod, s[i].size = fi.ModTime(), fi.Size()
		}
	}
	return s
}

// GetCertificate is tls.Config's hook: the current pair.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.current.Load(), nil
}

// run reloads the pair when its files change or SIGHUP arrives, until ctx
// is done.
func (r *certReloader) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	tick := time.NewTicker(certPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.reload("SIGHUP", true)
		case <-tick.C:
			r.reload("the files changed", false)
		}
	}
}

// reload loads the pair again if forced or if a file changed since the last
// try; a pair that fails keeps the old one and is tried again only once a
// file changes again (or on SIGHUP), so a bad pair is logged once.
func (r *certReloader) reload(why string, force bool) {
	now := r.stamps()
	if !force && now == r.seen {
		return
	}
	r.seen = now
	cert, err := r.load()
	if err != nil {
		r.logger.Warn("TLS certificate not reloaded; serving the previous one", logkey.Why, why, logkey.Err, err)
		return
	}
	r.current.Store(cert)
	r.logger.Info("TLS certificate reloaded", logkey.Why, why, logkey.File, r.certFile)
}
