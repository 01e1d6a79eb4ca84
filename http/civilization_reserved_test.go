package http

import (
	"net/http"
	"testing"
)

// TestReservedSlugs: an agent cannot take as its slug the id of a subnet this
// node governs, nor a name that carries authority, at bootstrap or on a rename,
// so it cannot publish under a government's name.
func TestReservedSlugs(t *testing.T) {
	n := newCivNodeServing(t, nil, func(o *Options) { o.Governs = []string{"genesis", "mars"} })
	tip := n.log.Tip().Seq
	for _, tc := range []struct {
		slug         string
		status       int
		code, reason string
	}{
		{"genesis", http.StatusConflict, "slug_reserved", "the default governed subnet"},
		{"mars", http.StatusConflict, "slug_reserved", "a subnet of --governs"},
		{"treasury", http.StatusConflict, "slug_reserved", "an office"},
		{"frontier", http.StatusConflict, "slug_reserved", "a faction of the catalog"},
		{"Genesis", http.StatusBadRequest, "invalid_field", "slugs are lower case"},
	} {
		t.Run(tc.slug, func(t *testing.T) {
			r := n.civPost("/v1/civilization/bootstrap-identity", map[string]any{"display_name": "Squatter", "public_id": tc.slug})
			r.wantError(t, tc.status, tc.code, "public_id")
			if got := n.log.Tip().Seq; got != tip {
				t.Errorf("%s: tip moved from %d to %d", tc.reason, tip, got)
			}
		})
	}

	// An agent renaming itself to a governed subnet is refused as well.
	did, slug := n.bootstrap(map[string]any{"display_name": "Mars"})
	if slug != "mars-2" {
		t.Errorf("generated public_id %q, want mars-2: the reserved mars is stepped over", slug)
	}
	tok := n.agentToken(slug)
	tip = n.log.Tip().Seq
	n.civSend(http.MethodPost, "/v1/civilization/public-identity", tok, map[string]any{"agent_did": did,
		"display_name": "Genesis", "public_id": "genesis"}).wantError(t, http.StatusConflict, "slug_reserved", "public_id")
	if got := n.log.Tip().Seq; got != tip {
		t.Errorf("tip moved from %d to %d on a refused rename", tip, got)
	}
	n.civSend(http.MethodGet, "/v1/civilization/public-identity?public_id=genesis", tok, nil).
		wantError(t, http.StatusNotFound, "identity_not_found", "public_id")
	// So the only missions published as genesis are the government's.
	n.civSend(http.MethodPost, "/v1/core/missions", tok, missionBody(map[string]any{"publisher": "genesis", "publisher_kind": "agent"})).
		wantError(t, http.StatusForbidden, "forbidden", "publisher")
}
