package eventlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// ErrNotFound is returned for an event that does not exist.
var ErrNotFound = errors.New("not found")

func decodeStored(raw []byte) (*Event, error) {
	ev := &Event{}
	if err := json.Unmarshal(raw, ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	ev.raw = raw
	return ev, nil
}

func (l *Log) readEvent(seq uint64) (*Event, error) {
	v, closer, err := l.db.Get(eventKey(seq))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read event %d: %w", seq, err)
	}
	raw := slices.Clone(v)
	closer.Close()
	return decodeStored(raw)
}

// Event returns the durable event at seq.
func (l *Log) Event(seq uint64) (*Event, error) {
	if seq == 0 || seq > l.Tip().Seq {
		return nil, fmt.Errorf("event %d: %w", seq, ErrNotFound)
	}
	return l.readEvent(seq)
}

// Scan calls fn for each stored event with from ≤ seq ≤ to, in seq order, holding
// one event at a time. A gap in seq is passed through for the caller to judge.
func (l *Log) Scan(from, to uint64, fn func(*Event) error) error {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: eventKey(from), UpperBound: eventKey(to + 1)})
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		ev, err := decodeStored(slices.Clone(it.Value()))
		if err != nil {
			return chainErr(ErrBrokenChain, u64(it.Key()[1:]), "%v", err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	return it.Error()
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
}

// ValidTypeFilter reports whether s is a usable Query.Type.
func ValidTypeFilter(s string) bool {
	if p, ok := strings.CutSuffix(s, ".*"); ok {
		return typeFilterPrefix.MatchString(p)
	}
	return ValidType(s)
}

var typeFilterPrefix = regexp.MustCompile(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)

// Query returns up to q.Limit matching events, oldest first, and the number of all
// matches. Both come from one consistent view of the durable chain. since= is a seek
// in the timestamp index and type= a seek in the type index; the total is computed
// from stored ordinals, not counted.
func (l *Log) Query(q Query) ([]Event, uint64, error) {
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

	start := uint64(1)
	if !q.Since.IsZero() {
		var err error
		if start, err = l.seqAfter(q.Since.UnixMicro(), end); err != nil {
			return nil, 0, err
		}
	}
	if start > end || q.Limit < 0 {
		return nil, 0, nil
	}
	if q.Type == "" {
		total := end - start + 1
		if q.Limit == 0 {
			return nil, total, nil
		}
		last := min(end, start+uint64(q.Limit)-1)
		events := make([]Event, 0, last-start+1)
		err := l.Scan(start, last, func(ev *Event) error { events = append(events, *ev); return nil })
		return events, total, err
	}
	var total uint64
	var seqs []uint64
	for _, t := range types {
		n, s, err := l.typeMatches(t, start, end, q.Limit)
		if err != nil {
			return nil, 0, err
		}
		total += n
		seqs = append(seqs, s...)
	}
	slices.Sort(seqs)
	if len(seqs) > q.Limit {
		seqs = seqs[:q.Limit]
	}
	events := make([]Event, 0, len(seqs))
	for _, s := range seqs {
		ev, err := l.readEvent(s)
		if err != nil {
			return nil, 0, err
		}
		events = append(events, *ev)
	}
	return events, total, nil
}

// typeMatches counts the events of typ with start ≤ seq ≤ end and returns the
// first limit of their seqs. Each type index entry holds the event's ordinal
// within its type, so the count is the last ordinal in range minus the first,
// plus one: two seeks, whatever the number of matches.
func (l *Log) typeMatches(typ string, start, end uint64, limit int) (uint64, []uint64, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: typeKey(typ, start), UpperBound: typeKey(typ, end+1)})
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, nil, it.Error()
	}
	lastOrdinal := u64(it.Value())
	it.First()
	total := lastOrdinal - u64(it.Value()) + 1
	var seqs []uint64
	for valid := true; valid && len(seqs) < limit; valid = it.Next() {
		k := it.Key()
		seqs = append(seqs, u64(k[len(k)-8:]))
	}
	return total, seqs, it.Error()
}

// seqAfter returns the seq of the first event with a timestamp after micros, or
// tip+1 if there is none.
func (l *Log) seqAfter(micros int64, tip uint64) (uint64, error) {
	if micros < 0 {
		return 1, nil
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: timeKey(micros + 1), UpperBound: []byte{spaceTime + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return tip + 1, it.Error()
	}
	return min(u64(it.Value()), tip+1), nil
}
