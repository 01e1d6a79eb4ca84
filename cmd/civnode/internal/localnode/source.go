package localnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/internal/logkey"
	"github.com/civnode/civnode/transparency"
)

// OpenSource opens the Merkle tree of the node of dir for the transparency
// tools: through the running node's API when one holds the data dir (reached
// as Dial reaches it, with addr its TCP address), else the log itself. The
// caller calls closeFn.
func OpenSource(ctx context.Context, dir datadir.Dir, addr string, logger *slog.Logger) (src transparency.Source, closeFn func() error, err error) {
	l, err := OpenChain(dir, logger)
	if errors.Is(err, datadir.ErrInUse) {
		ch, err := Dial(ctx, dir, addr, logger)
		if err != nil {
			return nil, nil, err
		}
		logger.Debug("a node runs on the data dir; reading its tree through its API", logkey.Via, ch.Via)
		c := transparency.NewClient(ch.HTTP, ch.Base, ch.Token, ch.Via)
		return transparency.APISource(c), func() error { ch.Close(); return nil }, nil
	}
	if err != nil {
		return nil, nil, err
	}
	closeFn = func() error {
		if err := l.Close(); err != nil {
			return fmt.Errorf("close event log: %w", err)
		}
		return nil
	}
	return transparency.WitnessedLogSource(l, string(dir), dir.CosignaturesPath()), closeFn, nil
}
