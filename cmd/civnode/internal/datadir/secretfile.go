package datadir

import (
	"fmt"
	"github.com/civnode/civnode/internal/logkey"
	"io"
	"log/slog"
	"os"
)

// secretMode is the mode of every secret file; see doc.go.
const secretMode = 0o600

// ReadSecret reads a secret, warning (without its content) when group or
// others may read it. A loose mode is not fatal; see doc.go.
func ReadSecret(path string, logger *slog.Logger) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		logger.Warn("secret file is readable by group or others; chmod 600 it", logkey.Path, path, logkey.Mode, perm.String())
	}
	const maxSecret = 64 << 10
	b, err := io.ReadAll(io.LimitReader(f, maxSecret+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecret {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxSecret)
	}
	return b, nil
}
