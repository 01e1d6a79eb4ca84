package projections_test

import (
	"encoding/base64"
	"testing"

	"github.com/civnode/civnode/projections"
)

// TestCursorAtTheLastSeq: a cursor that names the largest possible seq ends the
// list (an empty last page); it must not wrap around to the first page.
func TestCursorAtTheLastSeq(t *testing.T) {
	c := newChain(t)
	c.bootstrap(1, "ada")
	c.create(1, "genesis")
	last := func(tag byte) string {
		return base64.RawURLEncoding.EncodeToString([]byte{tag, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	}
	ids, next, err := c.ids.List(projections.Page{Cursor: last('i'), Limit: 10})
	if err != nil || len(ids) != 0 || next != "" {
		t.Fatalf("identities after the last seq: %d, next %q, %v", len(ids), next, err)
	}
	ms, next, err := c.missions.List(projections.MissionFilter{}, projections.Page{Cursor: last('m'), Limit: 10})
	if err != nil || len(ms) != 0 || next != "" {
		t.Fatalf("missions after the last seq: %d, next %q, %v", len(ms), next, err)
	}
}
