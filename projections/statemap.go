package projections

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/civnode/civnode/eventlog"
)

// StateView is the state map as one durable view of the read models holds
// it (Source.ModelView): every value read through it is of the same point
// of the chain, Seq. Close it when done. It is not safe for concurrent use.
//
// A view may be ahead of the events a caller has seen: the log commits on its
// own. So a map kept up to date reads a view first, then the keys
// (AppendStateKeys) of every event after the last one it applied up to and
// including the view's Seq, then their values from that view: its entries
// are then exactly those of the chain through Seq, the through_seq of a root
// it commits.
type StateView struct {
	v *eventlog.ModelView
	// r is what Value reads: v, or in a fold the fold's transaction.
	r reader
	// id is the identity read last: the identity, binding and profile keys
	// of one agent, which an event names together, decode it once.
	id *identityState
	// buf is the scratch a record is encoded into before its JCS form.
	buf []byte
}

// OpenStateView opens a view of the state map at the read models' durable
// state.
func OpenStateView(src Source) (*StateView, error) {
	v, err := view(src)
	if err != nil {
		return nil, err
	}
	return &StateView{v: v, r: v}, nil
}

// Close releases the view.
func (s *StateView) Close() { s.v.Close() }

// modelAppliedKey is where the log keeps, in each model space, the seq of the
// last event its models have applied (eventlog writes it in the batch of the
// events; TestStateViewSeq holds the two to each other).
var modelAppliedKey = []byte("\x00applied")

// Seq is the seq of the last event the view's read models have applied: the
// chain position E whose state the view's values are (0 before any event).
func (s *StateView) Seq() (uint64, error) {
	b, ok, err := s.v.Get(modelAppliedKey)
	if err != nil {
		return 0, storeErr(err)
	}
	if !ok {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, storeErr(fmt.Errorf("applied seq of %d bytes", len(b)))
	}
	return binary.BigEndian.Uint64(b), nil
}

// StateValue returns the value of the entry k of the state map at the read
// models' durable state: the JCS bytes of the record its route answers, ok
// false when the record does not exist. A key of no kind (StateKindIdentity…)
// is absent.
func StateValue(src Source, k string) (value []byte, ok bool, err error) {
	s, err := OpenStateView(src)
	if err != nil {
		return nil, false, err
	}
	defer s.Close()
	return s.Value(k)
}

// StateEntries calls fn with every entry of the state map at the read
// models' durable state, as StateView.Entries does.
func StateEntries(src Source, fn func(key string, value []byte) error) error {
	s, err := OpenStateView(src)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Entries(fn)
}

// Value returns the value of the entry k: the JCS bytes of the record its
// route answers, ok false when the record does not exist. The bytes are the
// caller's. k may come from anyone (a proof's query): an id holding 0x00,
// which separates the parts of the models' own keys and no id has, is absent.
func (s *StateView) Value(k string) (value []byte, ok bool, err error) {
	kind, id, found := SplitStateKey(k)
	if !found || strings.IndexByte(id, 0) >= 0 {
		return nil, false, nil
	}
	switch kind {
	case StateKindIdentity, StateKindBinding, StateKindProfile:
		st, ok, err := s.identity(id)
		if !ok || err != nil {
			return nil, false, err
		}
		return s.identityValue(kind, st)
	case StateKindMission:
		m := &missionState{}
		ok, err := load(s.r, key(missionRecord, id), m)
		if !ok || err != nil {
			return nil, false, err
		}
		v, err := s.missionValue(s.r, m)
		return v, err == nil, err
	case StateKindTreasury:
		b, ok, err := s.r.Get(key(missionTreasury, id))
		if err != nil {
			return nil, false, storeErr(err)
		}
		if !ok {
			return nil, false, nil
		}
		v, err := treasuryValue(b)
		return v, err == nil, err
	default:
		return nil, false, nil
	}
}

// identity loads the identity of did, from the last one read when it is that.
func (s *StateView) identity(did string) (*identityState, bool, error) {
	if s.id != nil && s.id.DID == did {
		return s.id, true, nil
	}
	st := &identityState{}
	ok, err := load(s.r, key(identityRecord, did), st)
	if !ok || err != nil {
		return nil, false, err
	}
	s.id = st
	return st, true, nil
}

// identityValue is the value of the record of kind (identity, binding or
// profile) of the identity st; ok is false for a binding it never had.
func (s *StateView) identityValue(kind string, st *identityState) ([]byte, bool, error) {
	var rec stateJCSAppender
	switch kind {
	case StateKindIdentity:
		r := st.record()
		rec = &r
	case StateKindBinding:
		if st.Binding == nil {
			return nil, false, nil
		}
		r := st.Binding.record()
		rec = &r
	default:
		r := st.Profile.record()
		rec = &r
	}
	v, err := s.canonical(rec)
	return v, err == nil, err
}

// missionValue is the value of m's record, with its result read from r.
func (s *StateView) missionValue(r reader, m *missionState) ([]byte, error) {
	result, _, err := loadResult(r, m)
	if err != nil {
		return nil, err
	}
	rec := m.record(result)
	return s.canonical(&rec)
}

// canonical is the JCS form of rec as the API writes it (http's writeJSON):
// written directly by its appender (statemap_jcs.go), or, when the appender
// declines, encoded as the API encodes it and put through the log's JCS
// encoder.
func (s *StateView) canonical(rec stateJCSAppender) ([]byte, error) {
	j := jcsWriter{b: make([]byte, 0, 512), ok: true}
	if rec.appendJCS(&j); j.ok {
		return j.b, nil
	}
	return s.slowCanonical(rec)
}

// slowCanonical is canonical by encodeJSON and the log's JCS encoder.
func (s *StateView) slowCanonical(rec any) ([]byte, error) {
	out, err := encodeJSON(s.buf[:0], rec)
	if err != nil {
		return nil, fmt.Errorf("encode state value: %w", err)
	}
	if cap(out) <= maxScratch {
		s.buf = out[:0]
	}
	v, err := eventlog.CanonicalObject(out)
	if err != nil {
		return nil, fmt.Errorf("state value: %w", err)
	}
	return v, nil
}

// maxExactInteger is the largest integer every JSON reader holds exactly
// (2^53 - 1, RFC 8785 §3.2.2.3): up to it, an integer's JCS form is its
// decimal digits.
const maxExactInteger = 1<<53 - 1

// treasuryValue is the JCS form of a stored treasury (8 bytes, big-endian):
// the integer the metrics route writes. The mission commands keep every
// treasury within 2^53 - 1 (commands.MaxBalance); one beyond, which only a
// hand-written chain holds, goes through the log's JCS encoder, which then
// writes it as a JSON reader reads it.
func treasuryValue(b []byte) ([]byte, error) {
	if len(b) != 8 {
		return nil, storeErr(fmt.Errorf("treasury of %d bytes", len(b)))
	}
	n := int64(binary.BigEndian.Uint64(b))
	if -maxExactInteger <= n && n <= maxExactInteger {
		return strconv.AppendInt(nil, n, 10), nil
	}
	obj, err := eventlog.CanonicalObject(strconv.AppendInt([]byte(`{"v":`), n, 10))
	if err != nil {
		return nil, fmt.Errorf("state value: %w", err)
	}
	return append([]byte(nil), obj[len(`{"v":`):len(obj)-1]...), nil
}

// Entries calls fn with every entry of the map, until fn returns an error,
// which Entries returns. The order is kind by kind: each identity's
// identity, binding (when it has one) and profile entries, the identities in
// agent_did byte order; then the missions, in mission_id byte order; then the
// treasuries, in subnet_id byte order. value is fn's to keep.
func (s *StateView) Entries(fn func(key string, value []byte) error) error {
	lo, hi := under(key(identityRecord))
	err := s.v.Scan(lo, hi, false, func(_, val []byte) (bool, error) {
		st := &identityState{}
		if err := json.Unmarshal(val, st); err != nil {
			return false, storeErr(fmt.Errorf("decode identity: %w", err))
		}
		for _, kind := range []string{StateKindIdentity, StateKindBinding, StateKindProfile} {
			v, ok, err := s.identityValue(kind, st)
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
			if err := fn(StateKey(kind, st.DID), v); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	lo, hi = under(key(missionRecord))
	err = s.v.Scan(lo, hi, false, func(_, val []byte) (bool, error) {
		m := &missionState{}
		if err := json.Unmarshal(val, m); err != nil {
			return false, storeErr(fmt.Errorf("decode mission: %w", err))
		}
		v, err := s.missionValue(s.v, m)
		if err != nil {
			return false, err
		}
		return true, fn(StateKey(StateKindMission, m.MissionID), v)
	})
	if err != nil {
		return err
	}
	lo, hi = under(key(missionTreasury))
	return s.v.Scan(lo, hi, false, func(k, val []byte) (bool, error) {
		v, err := treasuryValue(val)
		if err != nil {
			return false, err
		}
		return true, fn(StateKey(StateKindTreasury, string(k[len(lo):])), v)
	})
}
