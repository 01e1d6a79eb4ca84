package transparency

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/civnode/civnode/eventlog"
)

// IngestTail adds to l the events after its tip, up to size, from the event
// bundles published at c's source beyond its seal: the events of a tree a
// witness cosigned while the checkpoint and seal that name it were not
// written yet (a publisher stopped between the two). Each event is checked
// as Ingest checks it: its id, the log key's signature, and its link to the
// event before, so it is the origin's own; but no signed tree covers them
// yet, so the caller holds the result to one: a witness that cosigns the
// log's checkpoint of size (same size, same root) vouches for every event.
// It returns the number of events added.
func IngestTail(ctx context.Context, c *Client, l *eventlog.Log, size int64) (uint64, error) {
	tip := int64(l.Tip().Seq)
	var added uint64
	for n := tip / BundleSize; n*BundleSize < size; n++ {
		start := n * BundleSize
		path := BundlePath(n, int(min(BundleSize, size-start)))
		evs, err := readTailBundle(ctx, c, path, start, tip)
		if err != nil {
			return added, err
		}
		if len(evs) == 0 {
			continue
		}
		if err := l.Ingest(ctx, evs); err != nil {
			return added, fmt.Errorf("%w: %s: %w", ErrBadEvent, path, err)
		}
		added += uint64(len(evs))
		tip = int64(l.Tip().Seq)
	}
	return added, nil
}

// readTailBundle reads the bundle at path, whose first event is seq start+1,
// and returns its events after tip, each line at most eventlog.MaxEventSize.
func readTailBundle(ctx context.Context, c *Client, path string, start, tip int64) ([]*eventlog.Event, error) {
	body, err := c.open(ctx, "/"+path)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", path, err)
	}
	defer body.Close()
	r := bufio.NewReaderSize(io.LimitReader(body, maxBundleSize+1), 64<<10)
	var evs []*eventlog.Event
	for seq := uint64(start) + 1; ; seq++ {
		line, err := readLine(r, eventlog.MaxEventSize)
		if err == io.EOF && len(line) == 0 {
			return evs, nil
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadEvent, path, err)
		}
		var ev eventlog.Event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Seq != seq {
			return nil, fmt.Errorf("%w: line %d of %s is not event %d", ErrBadEvent, seq-uint64(start), path, seq)
		}
		if int64(seq) > tip {
			evs = append(evs, &ev)
		}
	}
}
