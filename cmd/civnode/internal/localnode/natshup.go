package localnode

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/civnode/civnode/stream"
)

// reloadNATSCertOnHUP loads the NATS port's certificate again on SIGHUP, as
// the HTTPS pair is (certReloader); between signals the stream polls the
// files itself. serve runs it only with --nats-tls-cert, so that SIGHUP
// keeps its default meaning for a node without TLS.
func reloadNATSCertOnHUP(ctx context.Context, st *stream.Server) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			st.ReloadTLS()
		}
	}
}
