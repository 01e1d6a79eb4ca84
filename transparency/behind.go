package transparency

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/civnode/civnode/eventlog"
)

// Behind says how far behind the checkpoint published at loc the chain of l
// is: loc is a directory Publish wrote, or the URL a static host serves it
// at. It returns the published tree's size and the events l lacks of it (0
// when l covers it). A published tree that l's tree disagrees with at that
// size is an error: another history, which must not go on.
func Behind(ctx context.Context, l *eventlog.Log, loc string) (size, behind int64, err error) {
	head, _, err := PublishedHead(ctx, l, loc)
	if err != nil {
		return 0, 0, err
	}
	tip := int64(l.Tip().Seq)
	if head.Size > tip {
		return head.Size, head.Size - tip, nil
	}
	root, err := l.TreeRoot(head.Size)
	if err != nil {
		return 0, 0, err
	}
	if root != head.Root {
		return 0, 0, fmt.Errorf("the checkpoint at %s (size %d) has another tree root than this chain at that size: the published history and this one differ", loc, head.Size)
	}
	return head.Size, 0, nil
}

// readPublishedCheckpoint reads the checkpoint file of a published directory
// or URL.
func readPublishedCheckpoint(ctx context.Context, loc string) ([]byte, error) {
	const limit = 64 << 10
	if !isURL(loc) {
		f, err := os.Open(filepath.Join(loc, CheckpointFile))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, limit))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(loc, "/")+"/"+CheckpointFile, nil)
	if err != nil {
		return nil, err
	}
	// A redirect is followed as a mirror's client follows it: within the
	// URL's scheme, host and port.
	resp, err := (&http.Client{CheckRedirect: sameOriginRedirect}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/%s: %s", loc, CheckpointFile, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}
