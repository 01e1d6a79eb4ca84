package projections

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"sort"
)

// ErrBadCursor is a cursor this model did not hand out.
var ErrBadCursor = errors.New("bad cursor")

// A cursor is opaque to clients. It holds the creation seq of the last identity of
// the page it ends: identities are listed in creation order and a new one always
// has a higher seq than every existing one, so paging from a cursor visits every
// identity exactly once, also while identities are being added.
//
// Encoding: base64url without padding of the byte 'i' and the seq as 8 bytes
// big-endian.
const cursorTag = 'i'

func encodeCursor(seq uint64) string {
	b := binary.BigEndian.AppendUint64([]byte{cursorTag}, seq)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the seq after which a page starts; "" starts at the
// beginning.
func decodeCursor(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 9 || b[0] != cursorTag {
		return 0, ErrBadCursor
	}
	return binary.BigEndian.Uint64(b[1:]), nil
}

// page returns the identities after cursor, at most limit, and the cursor of the
// next page ("" when this page reaches the end). The caller holds the read lock.
func (p *Identities) page(cursor string, limit int) ([]*identity, string, error) {
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if limit < 1 {
		limit = 1
	}
	start := sort.Search(len(p.order), func(i int) bool { return p.order[i].seq > after })
	end := min(start+limit, len(p.order))
	ids := p.order[start:end]
	next := ""
	if end < len(p.order) {
		next = encodeCursor(ids[len(ids)-1].seq)
	}
	return ids, next, nil
}

// List returns up to limit identity records in creation order after cursor, and
// the cursor of the next page ("" at the end). A cursor that was not handed out
// is ErrBadCursor.
func (p *Identities) List(cursor string, limit int) ([]IdentityRecord, string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ids, next, err := p.page(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]IdentityRecord, len(ids))
	for i, id := range ids {
		out[i] = id.record()
	}
	return out, next, nil
}

// Supervise is List with each identity's profile, for the operator.
func (p *Identities) Supervise(cursor string, limit int) ([]SupervisedIdentity, string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ids, next, err := p.page(cursor, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]SupervisedIdentity, len(ids))
	for i, id := range ids {
		out[i] = SupervisedIdentity{IdentityRecord: id.record(), Profile: id.profile.record()}
	}
	return out, next, nil
}

// Count is the number of identities.
func (p *Identities) Count() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.order)
}

// Find returns the oldest identity, with its profile, for which match reports
// true. It walks identities in creation order until the first match, so its cost
// is the position of that match. match runs under the model's read lock and must
// not call the model.
func (p *Identities) Find(match func(SupervisedIdentity) bool) (SupervisedIdentity, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, id := range p.order {
		s := SupervisedIdentity{IdentityRecord: id.record(), Profile: id.profile.record()}
		if match(s) {
			return s, true
		}
	}
	return SupervisedIdentity{}, false
}
