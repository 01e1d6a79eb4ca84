package projections

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/civnode/civnode/eventlog"
)

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

// each calls fn for each identity created after seq after, in creation order,
// until fn returns false.
func eachIdentity(v *eventlog.ModelView, after uint64, fn func(*identityState) (bool, error)) error {
	prefix := append(key(identityOrder), 0)
	if after == math.MaxUint64 {
		return nil // nothing follows the last possible seq
	}
	lower := seqKey(prefix, after+1)
	_, upper := under(key(identityOrder))
	return v.Scan(lower, upper, false, func(_, did []byte) (bool, error) {
		id := &identityState{}
		ok, err := load(v, key(identityRecord, string(did)), id)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, storeErr(fmt.Errorf("identity order names %s, which has no record", did))
		}
		return fn(id)
	})
}

// page returns the identities after pg.Cursor, and the cursor of the next page
// ("" when this page reaches the end); size is an identity's size as the list
// writes it (encodedSize).
func (p *Identities) page(pg Page, size func(*identityState) int) ([]*identityState, string, error) {
	after, err := decodeCursor(pg.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := max(pg.Limit, 1)
	v, err := view(p.src)
	if err != nil {
		return nil, "", err
	}
	defer v.Close()
	var ids []*identityState
	more, used := false, 0
	err = eachIdentity(v, after, func(id *identityState) (bool, error) {
		if len(ids) == limit {
			more = true
			return false, nil
		}
		n := 0
		if pg.Bytes > 0 {
			n = size(id)
		}
		if pg.Bytes > 0 && len(ids) > 0 && used+n > pg.Bytes {
			more = true
			return false, nil
		}
		used += n
		ids = append(ids, id)
		return true, nil
	})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if more {
		next = encodeCursor(ids[len(ids)-1].Seq)
	}
	return ids, next, nil
}

// identitySize is an identity's record as the API writes it.
func identitySize(id *identityState) int { return encodedSize(id.record()) }

// supervisedIdentitySize is an identity's supervised record as written.
func supervisedIdentitySize(id *identityState) int { return encodedSize(id.supervised()) }

// List returns identity records in creation order after pg.Cursor, and the
// cursor of the next page ("" at the end). A cursor that was not handed out is
// ErrBadCursor.
func (p *Identities) List(pg Page) ([]IdentityRecord, string, error) {
	ids, next, err := p.page(pg, identitySize)
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
func (p *Identities) Supervise(pg Page) ([]SupervisedIdentity, string, error) {
	ids, next, err := p.page(pg, supervisedIdentitySize)
	if err != nil {
		return nil, "", err
	}
	out := make([]SupervisedIdentity, len(ids))
	for i, id := range ids {
		out[i] = id.supervised()
	}
	return out, next, nil
}

// Count is the number of identities.
func (p *Identities) Count() (int, error) {
	r, done, err := p.reader()
	if err != nil {
		return 0, err
	}
	defer done()
	n, err := counter(r, key(identityCount, metricIdentities, ""))
	return int(n), err
}

// Find returns the oldest identity, with its profile, for which match reports
// true. It walks identities in creation order until the first match, so its cost
// is the position of that match.
func (p *Identities) Find(match func(SupervisedIdentity) bool) (SupervisedIdentity, bool, error) {
	v, err := view(p.src)
	if err != nil {
		return SupervisedIdentity{}, false, err
	}
	defer v.Close()
	var found *SupervisedIdentity
	err = eachIdentity(v, 0, func(id *identityState) (bool, error) {
		if s := id.supervised(); match(s) {
			found = &s
			return false, nil
		}
		return true, nil
	})
	if err != nil || found == nil {
		return SupervisedIdentity{}, false, err
	}
	return *found, true, nil
}
