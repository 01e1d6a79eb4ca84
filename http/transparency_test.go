package http

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// transparencyNode is a wired node with n events on its chain.
func transparencyNode(t *testing.T, n int) *civNode {
	t.Helper()
	node := newCivNode(t)
	for node.log.Tip().Seq < uint64(n) {
		k := min(64, n-int(node.log.Tip().Seq))
		drafts := make([]eventlog.Draft, k)
		for i := range drafts {
			drafts[i] = eventlog.Draft{Type: "test.event", Payload: map[string]int{"i": i}}
		}
		if _, err := node.log.Append(t.Context(), drafts...); err != nil {
			t.Fatal(err)
		}
	}
	return node
}

func decodeHash(t *testing.T, s string) tlog.Hash {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		t.Fatalf("hash %q: %v", s, err)
	}
	return tlog.Hash(b)
}

func decodeHashes(t *testing.T, ss []string) []tlog.Hash {
	out := make([]tlog.Hash, len(ss))
	for i, s := range ss {
		out[i] = decodeHash(t, s)
	}
	return out
}

// TestTransparencyHead: the summary's checkpoint is a note signed by the
// node's verifier key over origin, size and root, and the root is the
// RFC 9162 root of the event ids GET /v1/events serves.
func TestTransparencyHead(t *testing.T) {
	n := transparencyNode(t, 37)
	var head transparencyResponse
	n.get("/v1/transparency").decode(t, &head)
	if head.TreeSize != 37 || head.Origin != "civnode/"+n.log.NodeDID() {
		t.Fatalf("head %+v", head)
	}
	v, err := note.NewVerifier(head.VerifierKey)
	if err != nil {
		t.Fatalf("verifier key %q: %v", head.VerifierKey, err)
	}
	signed, err := note.Open([]byte(head.Checkpoint), note.VerifierList(v))
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	if want := fmt.Sprintf("%s\n37\n%s\n", head.Origin, head.RootHash); signed.Text != want {
		t.Fatalf("checkpoint text %q, want %q", signed.Text, want)
	}
	r := n.get("/v1/transparency/checkpoint")
	if r.status != 200 || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(r.body) != head.Checkpoint {
		t.Fatalf("GET checkpoint: %d %q %q", r.status, r.header.Get("Content-Type"), r.body)
	}

	var page struct {
		Events []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	n.get("/v1/events?limit=1000").decode(t, &page)
	var hashes []tlog.Hash
	reader := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	for i, ev := range page.Events {
		id, _ := hex.DecodeString(ev.ID)
		hs, err := tlog.StoredHashes(int64(i), id, reader)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hs...)
	}
	root, err := tlog.TreeHash(int64(len(page.Events)), reader)
	if err != nil {
		t.Fatal(err)
	}
	if b64(root) != head.RootHash {
		t.Fatalf("root %s, recomputed from the events %s", head.RootHash, b64(root))
	}
}

// TestTransparencyProofs: proofs served over HTTP verify with tlog, against
// the roots the node serves, for every seq and several sizes.
func TestTransparencyProofs(t *testing.T) {
	n := transparencyNode(t, 70)
	roots := map[int64]tlog.Hash{}
	for size := int64(1); size <= 70; size++ {
		var p inclusionResponse
		n.get(fmt.Sprintf("/v1/transparency/proof/inclusion?seq=1&tree_size=%d", size)).decode(t, &p)
		roots[size] = decodeHash(t, p.RootHash)
	}
	for seq := uint64(1); seq <= 70; seq++ {
		for _, size := range []int64{int64(seq), 70} {
			var p inclusionResponse
			n.get(fmt.Sprintf("/v1/transparency/proof/inclusion?seq=%d&tree_size=%d", seq, size)).decode(t, &p)
			if p.Seq != seq || p.LeafIndex != int64(seq)-1 || p.TreeSize != size {
				t.Fatalf("proof header %+v", p)
			}
			if err := tlog.CheckRecord(decodeHashes(t, p.Proof), size, roots[size], p.LeafIndex, decodeHash(t, p.LeafHash)); err != nil {
				t.Fatalf("inclusion of %d in %d: %v", seq, size, err)
			}
		}
	}
	var p inclusionResponse
	n.get("/v1/transparency/proof/inclusion?seq=5").decode(t, &p)
	if p.TreeSize != 70 {
		t.Fatalf("default tree_size %d, want the current 70", p.TreeSize)
	}
	for _, c := range [][2]int64{{1, 70}, {13, 64}, {64, 70}, {70, 70}, {5, 6}} {
		var cp consistencyResponse
		n.get(fmt.Sprintf("/v1/transparency/proof/consistency?from=%d&to=%d", c[0], c[1])).decode(t, &cp)
		if cp.From != c[0] || cp.To != c[1] || cp.Proof == nil {
			t.Fatalf("consistency header %+v", cp)
		}
		if err := tlog.CheckTree(decodeHashes(t, cp.Proof), c[1], roots[c[1]], c[0], roots[c[0]]); err != nil {
			t.Fatalf("consistency %d → %d: %v", c[0], c[1], err)
		}
	}
}

// TestTransparencyBadParams: each bad value is 400 naming it, nothing else.
func TestTransparencyBadParams(t *testing.T) {
	n := transparencyNode(t, 10)
	for _, c := range []struct{ path, code, field string }{
		{"/v1/transparency/proof/inclusion", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=0", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=-1", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=1e3", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=99999999999999999999", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=11", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=5&tree_size=4", "invalid_field", "seq"},
		{"/v1/transparency/proof/inclusion?seq=1&tree_size=11", "invalid_field", "tree_size"},
		{"/v1/transparency/proof/inclusion?seq=1&tree_size=0", "invalid_field", "tree_size"},
		{"/v1/transparency/proof/inclusion?seq=1&tree-size=5", "invalid_query", "tree-size"},
		{"/v1/transparency/proof/inclusion?seq=1&seq=2", "invalid_query", "seq"},
		{"/v1/transparency/proof/consistency?to=5", "invalid_field", "from"},
		{"/v1/transparency/proof/consistency?from=5", "invalid_field", "to"},
		{"/v1/transparency/proof/consistency?from=0&to=5", "invalid_field", "from"},
		{"/v1/transparency/proof/consistency?from=6&to=5", "invalid_field", "from"},
		{"/v1/transparency/proof/consistency?from=1&to=11", "invalid_field", "to"},
		{"/v1/transparency/tile/0/abc", "invalid_field", "tile"},
		{"/v1/transparency/tile/data/000", "invalid_field", "tile"},
		{"/v1/transparency/tile/0/000.p/0", "invalid_field", "tile"},
		{"/v1/transparency/tile/0/000.p/256", "invalid_field", "tile"},
		{"/v1/transparency/tile/0/1234", "invalid_field", "tile"},
		{"/v1/transparency/tile/-1/000", "invalid_field", "tile"},
		{"/v1/transparency/tile/", "invalid_field", "tile"},
	} {
		t.Run(c.path, func(t *testing.T) {
			n.get(c.path).wantError(t, http.StatusBadRequest, c.code, c.field)
		})
	}
}

// TestTransparencyTiles: a full tile is the leaf hashes and immutable; a
// tile beyond the tree is 404.
func TestTransparencyTiles(t *testing.T) {
	n := transparencyNode(t, 300)
	r := n.get("/v1/transparency/tile/0/000")
	if r.status != 200 || len(r.body) != 256*32 || r.header.Get("Content-Type") != "application/octet-stream" ||
		r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Fatalf("full tile: %d, %d bytes, %q, %q", r.status, len(r.body), r.header.Get("Content-Type"), r.header.Get("Cache-Control"))
	}
	for i := range 256 {
		leaf, _ := n.log.LeafHash(uint64(i + 1))
		if !bytes.Equal(r.body[32*i:32*i+32], leaf[:]) {
			t.Fatalf("entry %d is not leaf %d", i, i)
		}
	}
	if r := n.get("/v1/transparency/tile/0/001.p/44"); r.status != 200 || len(r.body) != 44*32 {
		t.Fatalf("partial tile: %d, %d bytes", r.status, len(r.body))
	}
	if r := n.get("/v1/transparency/tile/1/000.p/1"); r.status != 200 || len(r.body) != 32 {
		t.Fatalf("level-1 tile: %d, %d bytes", r.status, len(r.body))
	}
	for _, path := range []string{"0/001", "0/001.p/45", "0/002.p/1", "1/000.p/2", "0/x001/000",
		"0/x999/x999/x999/x999/x999/999", "5/000.p/1"} {
		r := n.get("/v1/transparency/tile/" + path)
		r.wantError(t, http.StatusNotFound, "tile_not_found", "")
		if !strings.Contains(string(r.body), "300 events") {
			t.Errorf("%s: %s", path, r.body)
		}
	}
}

// TestTransparencyAccess: the owner and observer tokens read every
// transparency endpoint, an agent token is 403 and no token 401.
func TestTransparencyAccess(t *testing.T) {
	n := transparencyNode(t, 3)
	n.bootstrap(map[string]any{"display_name": "Ada", "public_id": "ada"})
	observer, agent := n.observerToken(), n.agentToken("ada")
	for _, path := range []string{"/v1/transparency", "/v1/transparency/checkpoint",
		"/v1/transparency/proof/inclusion?seq=1", "/v1/transparency/proof/consistency?from=1&to=2",
		"/v1/transparency/tile/0/000.p/2"} {
		for name, tok := range map[string]string{"owner": testToken, "observer": observer} {
			if r := n.request(http.MethodGet, path, tok, nil); r.status != 200 {
				t.Errorf("%s with the %s token: %d %s", path, name, r.status, r.body)
			}
		}
		n.request(http.MethodGet, path, agent, nil).wantError(t, http.StatusForbidden, "forbidden", "")
		n.request(http.MethodGet, path, "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
	}
}
