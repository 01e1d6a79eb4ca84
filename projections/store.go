package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/civnode/civnode/eventlog"
)

// Source is where the models read their state: the log's model space
// (*eventlog.Log). Queries read a durable ModelView; decisions read
// ModelLatest, which also holds what the sequencer has folded but not yet made
// durable.
type Source interface {
	ModelLatest() eventlog.ModelReader
	ModelView() (*eventlog.ModelView, error)
}

// reader is the state one query or one fold reads: a ModelTxn in a fold, a
// ModelView or the latest state in a query.
type reader interface {
	Get(key []byte) ([]byte, bool, error)
}

// writer is a fold's side of a ModelTxn. Answer hands the writer of the event
// what the fold made of it (eventlog.ModelTxn.Answer); a fold calls it last,
// once it has accepted the event.
type writer interface {
	reader
	Set(key, value []byte)
	// SetIndex writes an entry the folds never read back: an index entry.
	SetIndex(key, value []byte)
	Delete(key []byte)
	Answer(v any)
}

func storeErr(err error) error { return fmt.Errorf("%w: %w", errStore, err) }

// key joins a key space tag and its parts with 0x00, which no part contains
// (ids, slugs and DIDs are printable).
func key(tag string, parts ...string) []byte {
	n := len(tag)
	for _, p := range parts {
		n += 1 + len(p)
	}
	k := make([]byte, 0, n+8)
	k = append(k, tag...)
	for _, p := range parts {
		k = append(append(k, 0), p...)
	}
	return k
}

// seqKey appends seq big-endian, so keys sort in seq order.
func seqKey(prefix []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(prefix)+8), prefix...), seq)
}

// under returns the bounds of every key that starts with prefix followed by 0x00.
func under(prefix []byte) (lower, upper []byte) {
	lower = append(bytes.Clone(prefix), 0)
	upper = append(bytes.Clone(prefix), 1)
	return lower, upper
}

// encode is the stored form of a model value: JSON without HTML escaping, so
// payloads keep the bytes of the event they came from. A value with an
// appender (jsonappend.go) skips encoding/json's reflection, which on the
// log's sequencer is paid once per append.
func encode(v any) ([]byte, error) {
	buf := scratch.Get().(*[]byte)
	defer putScratch(buf)
	out, err := encodeJSON((*buf)[:0], v)
	if err != nil {
		return nil, fmt.Errorf("encode read model value: %w", err)
	}
	*buf = out[:0]
	// A copy of just the bytes: the buffer's spare capacity would otherwise
	// stay alive in the model's value cache, doubling what each entry holds.
	return bytes.Clone(out), nil
}

// scratch holds the buffers encode and encodedSize write into before they
// copy or count. One that grew past maxScratch (a large result or payload) is
// left to the collector rather than kept for the next small value.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

const maxScratch = 64 << 10

func putScratch(buf *[]byte) {
	if cap(*buf) > maxScratch {
		return
	}
	scratch.Put(buf)
}

// encodedSize is the size of v as the API writes it in a list, which is what
// a page's byte budget counts (Page): its JSON as encoding/json writes it
// without HTML escaping (http's marshalJSON), and one byte for the comma that
// separates it from the item before. It counts what is written, not what is
// stored: a text of control characters is six times its stored size once
// escaped (\u0001).
func encodedSize(v any) int {
	if a, ok := v.(jsonAppender); ok {
		buf := scratch.Get().(*[]byte)
		defer putScratch(buf)
		if out, ok := a.AppendJSON((*buf)[:0]); ok {
			*buf = out[:0]
			return len(out) + 1 // the newline Encode would write stands for the comma
		}
	}
	var n countingWriter
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0 // records always encode; http's own encoding would fail the same
	}
	return int(n) // Encode's newline stands for the comma
}

// countingWriter counts the bytes written to it.
type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// load reads and decodes the value of k into v; ok is false when there is none.
func load(r reader, k []byte, v any) (bool, error) {
	b, ok, err := r.Get(k)
	if err != nil {
		return false, storeErr(err)
	}
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, storeErr(fmt.Errorf("decode %q: %w", k, err))
	}
	return true, nil
}

// store encodes v under k.
func store(w writer, k []byte, v any) error {
	b, err := encode(v)
	if err != nil {
		return err
	}
	w.Set(k, b)
	return nil
}

// counter reads an int64 kept under k (0 when absent).
func counter(r reader, k []byte) (int64, error) {
	b, ok, err := r.Get(k)
	if err != nil {
		return 0, storeErr(err)
	}
	if !ok || len(b) != 8 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// add adds d to the counter under k; a counter that reaches 0 is deleted, so
// a scan of counters lists only the values that have some.
func add(w writer, k []byte, d int64) error {
	n, err := counter(w, k)
	if err != nil {
		return err
	}
	if n += d; n == 0 {
		w.Delete(k)
		return nil
	}
	w.Set(k, binary.BigEndian.AppendUint64(nil, uint64(n)))
	return nil
}

// counters returns every counter under prefix 0x00 <name>, by name.
func counters(v *eventlog.ModelView, prefix []byte) (map[string]int, error) {
	out := map[string]int{}
	lo, hi := under(prefix)
	err := v.Scan(lo, hi, false, func(k, val []byte) (bool, error) {
		if len(val) == 8 {
			out[string(k[len(lo):])] = int(int64(binary.BigEndian.Uint64(val)))
		}
		return true, nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// queries is what the queries of every model share: where they read, and at
// which point in time.
type queries struct {
	src Source
	// latest makes them read the newest state (a model's Decisions).
	latest bool
}

// reader opens what one query reads; done releases it.
func (q queries) reader() (r reader, done func(), err error) {
	if q.latest {
		return latest{q.src}, func() {}, nil
	}
	v, err := view(q.src)
	if err != nil {
		return nil, nil, err
	}
	return v, v.Close, nil
}

// decisions is q read at the newest state.
func (q queries) decisions() queries { return queries{src: q.src, latest: true} }

// latest reads the newest state through src, for decisions.
type latest struct{ src Source }

func (l latest) Get(k []byte) ([]byte, bool, error) { return l.src.ModelLatest().Get(k) }

// view opens a durable view of src.
func view(src Source) (*eventlog.ModelView, error) {
	v, err := src.ModelView()
	if err != nil {
		return nil, storeErr(err)
	}
	return v, nil
}
