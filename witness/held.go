package witness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// HeldSize asks the witness r which tree of a log it holds, with signed, the
// log's checkpoint of size events, as an add-checkpoint request with old =
// size: size when the witness cosigns it (it holds that tree, or no larger
// one it would have to prove consistent), or the size its 409 names, larger
// or smaller. A 409 naming size itself is ErrHeldAnotherTree: the witness
// cosigned another tree of that size. A fork guard reads a larger answer as
// a checkpoint of the log's key that the log does not have. client nil is a client of its own;
// either way redirects stay on the witness's own scheme, host and port.
func HeldSize(ctx context.Context, client *http.Client, r Remote, signed []byte, size int64) (int64, error) {
	if client == nil {
		client = &http.Client{Timeout: requestTimeout}
	}
	s := &Submitter{opts: SubmitterOptions{Client: withRedirectRule(client), Now: time.Now}}
	_, held, err := s.post(ctx, r, size, eventlog.TreeHead{Size: size}, signed)
	var conflict *conflictError
	switch {
	case err == nil:
		return size, nil
	case errors.As(err, &conflict) && held == size:
		return held, fmt.Errorf("%w: %d events", ErrHeldAnotherTree, size)
	case errors.As(err, &conflict):
		return held, nil
	default:
		return 0, err
	}
}
