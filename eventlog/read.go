package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func decodeStored(raw []byte) (*Event, error) {
	ev := &Event{}
	if err := json.Unmarshal(raw, ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	ev.raw = raw
	return ev, nil
}

// readEvent reads the event at seq. An event that cannot be read is ErrCorrupt
// naming the seqs from seq to at most end that cannot be read, one that does
// not decode is ErrCorrupt at seq.
func (l *Log) readEvent(seq, end uint64) (*Event, error) {
	v, closer, err := l.db.Get(eventKey(seq))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	if pebble.IsCorruptionError(err) {
		return nil, l.unreadable(seq, end, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	raw := slices.Clone(v)
	closer.Close()
	ev, err := decodeStored(raw)
	if err != nil {
		return nil, chainErr(ErrCorrupt, seq, "%v", err)
	}
	return ev, nil
}

// Event returns the durable event at seq.
func (l *Log) Event(seq uint64) (*Event, error) {
	tip := l.Tip().Seq
	if seq == 0 || seq > tip {
		return nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	return l.readEvent(seq, tip)
}

// Scan calls fn for each stored event with from ≤ seq ≤ to, in seq order, holding
// one event at a time. A gap in seq is passed through for the caller to judge.
func (l *Log) Scan(from, to uint64, fn func(*Event) error) error {
	return l.scanRaw(context.Background(), from, to, func(seq uint64, raw []byte) error {
		ev, err := decodeStored(slices.Clone(raw))
		if err != nil {
			return chainErr(ErrBrokenChain, seq, "%v", err)
		}
		return fn(ev)
	})
}

// scanRaw calls fn with the stored bytes of each event with from ≤ seq ≤ to, in
// seq order, without decoding them; raw is valid only during the call. It stops
// with ctx's error once ctx is done. Events that cannot be read end the scan
// with ErrCorrupt naming their seqs.
func (l *Log) scanRaw(ctx context.Context, from, to uint64, fn func(seq uint64, raw []byte) error) error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(from), UpperBound: eventKey(to + 1)})
	if err != nil {
		return fmt.Errorf("read events from seq %d: %w", from, l.readFault(err))
	}
	defer it.Close()
	next := from // the first seq not yet read
	fault := func(err error) error {
		if pebble.IsCorruptionError(err) {
			return l.unreadable(next, to, err)
		}
		return fmt.Errorf("read events from seq %d: %w", next, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		seq := u64(it.Key()[1:])
		next = seq
		raw, err := it.ValueAndErr()
		if err != nil {
			return fault(err)
		}
		if err := fn(seq, raw); err != nil {
			return err
		}
		next = seq + 1
	}
	if err := it.Error(); err != nil {
		return fault(err)
	}
	return nil
}

// Query selects events for GET /v1/events.
type Query struct {
	// Since, if not zero, keeps only events with a later timestamp.
	Since time.Time
	// Type keeps only events of this type, or of a type with this prefix when it
	// ends in ".*". Empty keeps every type.
	Type string
	// Limit caps the events returned; Total still counts every match. Zero
	// returns no events, only the count.
	Limit int
	// Until, if not zero, ends the view at this seq (or at the durable tip if that
	// is lower), so that several queries can count over one fixed chain.
	Until uint64
	// After, if not zero, starts the view after this seq: what a reader that
	// has seen the chain up to it has still to read.
	After uint64
}

// ValidTypeFilter reports whether s is a usable Query.Type.
func ValidTypeFilter(s string) bool {
	if p, ok := strings.CutSuffix(s, ".*"); ok {
		return dotted(p, 1)
	}
	return ValidType(s)
}

// Query returns up to q.Limit matching events, decoded, oldest first, and the
// number of all matches; see QueryRaw, which it is built on. Serving code uses
// QueryRaw and never decodes.
func (l *Log) Query(q Query) ([]Event, uint64, error) {
	var events []Event
	total, err := l.QueryRaw(context.Background(), q, func(seq uint64, raw []byte) (bool, error) {
		ev, err := decodeStored(slices.Clone(raw))
		if err != nil {
			return false, chainErr(ErrBrokenChain, seq, "%v", err)
		}
		events = append(events, *ev)
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	return events, total, nil
}

// QueryRaw calls fn with the stored bytes of up to q.Limit matching events,
// oldest first, and returns the number of all matches. The bytes are the served
// form (doc.go) and are never decoded here: raw is Pebble's own buffer, valid only
// during the call, and fn must neither keep nor modify it. fn returns false to
// stop early (a page that is full), or an error, which QueryRaw returns. Before
// each event QueryRaw checks ctx and stops with its error once it is done, so a
// request that has timed out or lost its client stops reading the store.
//
// The total is known before the first event and is computed from the index, not
// counted; it holds even when fn stops early. Everything comes from one Pebble
// iterator, so one consistent view of the durable chain: since= is one seek in the
// timestamp index, then the events are read in order from the event key space
// (seq is contiguous). type= reads the type index for the total (two seeks per
// type, from stored ordinals) and the matching seqs, then seeks each event.
func (l *Log) QueryRaw(ctx context.Context, q Query, fn func(seq uint64, raw []byte) (bool, error)) (uint64, error) {
	l.mu.RLock()
	end := l.tip.Seq
	var types []string
	if q.Type != "" {
		if prefix, ok := strings.CutSuffix(q.Type, "*"); ok {
			for t := range l.typeCounts {
				if strings.HasPrefix(t, prefix) {
					types = append(types, t)
				}
			}
			sort.Strings(types)
		} else if l.typeCounts[q.Type] > 0 {
			types = []string{q.Type}
		}
	}
	l.mu.RUnlock()
	if q.Until > 0 && q.Until < end {
		end = q.Until
	}
	if q.Limit < 0 || q.Type != "" && len(types) == 0 {
		return 0, nil
	}
	// The iterator is created after the tip was read, so it sees every event up to
	// end: the committer publishes a tip only once its batch is applied.
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceTime}, UpperBound: []byte{spaceTime + 1}})
	if err != nil {
		return 0, fmt.Errorf("query events: %w", l.readFault(err))
	}
	defer it.Close()

	start := uint64(1)
	if !q.Since.IsZero() {
		if start, err = seqAfter(it, q.Since.UnixMicro(), end); err != nil {
			return 0, fmt.Errorf("query events: since %s: %w", q.Since.UTC().Format(TimeLayout), l.readFault(err))
		}
	}
	start = max(start, q.After+1)
	if start > end {
		return 0, nil
	}
	if q.Type == "" {
		total := end - start + 1
		if q.Limit == 0 {
			return total, nil
		}
		last := min(end, start+uint64(q.Limit)-1)
		it.SetBounds(eventKey(start), eventKey(last+1))
		next := start // the first seq not yet read
		for valid := it.First(); valid; valid = it.Next() {
			next = u64(it.Key()[1:])
			if more, err := l.emit(ctx, it, end, fn); err != nil || !more {
				return total, err
			}
			next++
		}
		if err := it.Error(); err != nil {
			if pebble.IsCorruptionError(err) {
				return total, l.unreadable(next, end, err)
			}
			return total, fmt.Errorf("query events from seq %d: %w", next, err)
		}
		return total, nil
	}

	var total uint64
	var seqs []uint64
	for _, t := range types {
		n, err := typeMatches(it, t, start, end, q.Limit, &seqs)
		if err != nil {
			return 0, fmt.Errorf("query events: type index of %s: %w", t, l.readFault(err))
		}
		total += n
	}
	if len(types) > 1 {
		slices.Sort(seqs)
	}
	if len(seqs) > q.Limit {
		seqs = seqs[:q.Limit]
	}
	if len(seqs) == 0 {
		return total, nil
	}
	it.SetBounds(eventKey(seqs[0]), eventKey(seqs[len(seqs)-1]+1))
	valid, at := false, uint64(0)
	for _, seq := range seqs {
		// A near match is reached by stepping, which is cheaper than a seek;
		// a far one by a seek.
		if valid && seq > at && seq-at <= maxStep {
			for valid && at < seq {
				if valid = it.Next(); valid {
					at = u64(it.Key()[1:])
				}
			}
		} else if valid = it.SeekGE(eventKey(seq)); valid {
			at = u64(it.Key()[1:])
		}
		if !valid || at != seq {
			if err := it.Error(); pebble.IsCorruptionError(err) {
				return total, l.unreadable(seq, end, err)
			} else if err != nil {
				return total, fmt.Errorf("query events: event %d: %w", seq, err)
			}
			return total, fmt.Errorf("query events: indexed event %d: %w", seq, ErrNotFound)
		}
		if more, err := l.emit(ctx, it, end, fn); err != nil || !more {
			return total, err
		}
	}
	return total, nil
}

// maxStep is how far QueryRaw steps through events that do not match a type
// filter before it seeks instead.
const maxStep = 16

// emit passes the event under it to fn, after checking ctx.
func (l *Log) emit(ctx context.Context, it *pebble.Iterator, end uint64, fn func(uint64, []byte) (bool, error)) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	seq := u64(it.Key()[1:])
	raw, err := it.ValueAndErr()
	if pebble.IsCorruptionError(err) {
		return false, l.unreadable(seq, end, err)
	}
	if err != nil {
		return false, fmt.Errorf("read event %d: %w", seq, err)
	}
	return fn(seq, raw)
}

// typeMatches counts the events of typ with start ≤ seq ≤ end and appends the
// first limit of their seqs to seqs. Each type index entry holds the event's
// ordinal within its type, so the count is the last ordinal in range minus the
// first, plus one: two seeks, whatever the number of matches.
func typeMatches(it *pebble.Iterator, typ string, start, end uint64, limit int, seqs *[]uint64) (uint64, error) {
	it.SetBounds(typeKey(typ, start), typeKey(typ, end+1))
	if !it.Last() {
		return 0, it.Error()
	}
	lastOrdinal := u64(it.Value())
	if !it.First() { // the last entry was there, so only an error ends this
		return 0, it.Error()
	}
	total := lastOrdinal - u64(it.Value()) + 1
	for n, valid := 0, true; valid && n < limit; n, valid = n+1, it.Next() {
		k := it.Key()
		*seqs = append(*seqs, u64(k[len(k)-8:]))
	}
	return total, it.Error()
}

// seqAfter returns the seq of the first event with a timestamp after micros, or
// tip+1 if there is none. it is repositioned over the timestamp index.
func seqAfter(it *pebble.Iterator, micros int64, tip uint64) (uint64, error) {
	if micros < 0 {
		return 1, nil
	}
	it.SetBounds(timeKey(micros+1), []byte{spaceTime + 1})
	if !it.First() {
		return tip + 1, it.Error()
	}
	return min(u64(it.Value()), tip+1), nil
}

// ScanRaw calls fn with the stored bytes of each event with from ≤ seq ≤ to,
// in seq order, until ctx is done; fn must not keep raw past its call.
func (l *Log) ScanRaw(ctx context.Context, from, to uint64, fn func(seq uint64, raw []byte) error) error {
	return l.scanRaw(ctx, from, to, fn)
}
