package eventlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// rfc9162Root is the Merkle tree hash of RFC 9162 §2.1.1, written straight
// from the RFC and sharing nothing with tlog or the node: MTH of one leaf is
// SHA-256(0x00 ‖ d); of n > 1 leaves, with k the largest power of two below
// n, SHA-256(0x01 ‖ MTH(first k) ‖ MTH(the rest)).
func rfc9162Root(leaves [][]byte) [32]byte {
	if len(leaves) == 1 {
		return sha256.Sum256(append([]byte{0}, leaves[0]...))
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	l, r := rfc9162Root(leaves[:k]), rfc9162Root(leaves[k:])
	return sha256.Sum256(append(append([]byte{1}, l[:]...), r[:]...))
}

// TestTreeChainVector: the root of the tree over the events of
// testdata/vectors/chain-v1.json, computed through the node's tree, equals the
// RFC's root over the vector's own ids, and the committed golden root.
func TestTreeChainVector(t *testing.T) {
	v := loadVector(t)
	start, _ := time.Parse(TimeLayout, "2026-01-02T03:04:05.000000Z")
	l := openMem(t, Options{Key: seedKey(t, v.SeedHex), Now: stalledClock(start)})
	for _, ve := range v.Events[1:] {
		var typ string
		json.Unmarshal(ve.Event["type"], &typ)
		mustAppend(t, l, Draft{Type: typ, Payload: ve.Event["payload"]})
	}
	var leaves [][]byte
	for _, ve := range v.Events {
		var id string
		json.Unmarshal(ve.Event["id"], &id)
		b, err := hex.DecodeString(id)
		if err != nil || len(b) != 32 {
			t.Fatalf("vector id %q", id)
		}
		leaves = append(leaves, b)
	}
	head, err := l.TreeHead()
	if err != nil {
		t.Fatal(err)
	}
	want := rfc9162Root(leaves)
	if head.Size != int64(len(leaves)) || head.Root != tlog.Hash(want) {
		t.Fatalf("tree head %d %x, want %d %x", head.Size, head.Root, len(leaves), want)
	}
	checkGolden(t, "tree-root-chain-v1.txt", []byte(base64.StdEncoding.EncodeToString(want[:])+"\n"))
}

// TestTreeRFCRootsEverySize holds the node's root of every size up to 300
// equal to the RFC's, so every shape of the right edge is covered.
func TestTreeRFCRootsEverySize(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 299)
	var leaves [][]byte
	for seq := uint64(1); seq <= 300; seq++ {
		ev, err := l.Event(seq)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := hex.DecodeString(ev.ID)
		leaves = append(leaves, id)
		got, err := l.TreeRoot(int64(seq))
		if err != nil {
			t.Fatal(err)
		}
		if want := rfc9162Root(leaves); got != tlog.Hash(want) {
			t.Fatalf("size %d: root %x, want %x", seq, got, want)
		}
	}
}

// appendN appends n events in groups of up to 64 drafts.
func appendN(t testing.TB, l *Log, n int) {
	t.Helper()
	for n > 0 {
		k := min(n, 64)
		drafts := make([]Draft, k)
		for i := range drafts {
			drafts[i] = Draft{Type: "test.event", Payload: map[string]int{"n": n - i}}
		}
		mustAppend(t, l, drafts...)
		n -= k
	}
}

// TestTreeProofsProperty: for random tree sizes up to 2,000 and random
// indices, every inclusion and consistency proof the node gives verifies with
// tlog.CheckRecord / tlog.CheckTree, and the same proof with one byte changed
// does not.
func TestTreeProofsProperty(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 1999)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for range 300 {
		size := 1 + rng.Int64N(2000)
		root, err := l.TreeRoot(size)
		if err != nil {
			t.Fatal(err)
		}
		seq := 1 + uint64(rng.Int64N(size))
		leaf, err := l.LeafHash(seq)
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.ProveInclusion(seq, size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, size, root, int64(seq)-1, leaf); err != nil {
			t.Fatalf("inclusion of seq %d in %d: %v", seq, size, err)
		}
		if len(p) > 0 {
			bad := append(tlog.RecordProof(nil), p...)
			i := rng.IntN(len(bad))
			bad[i][rng.IntN(32)] ^= 1 << rng.IntN(8)
			if tlog.CheckRecord(bad, size, root, int64(seq)-1, leaf) == nil {
				t.Fatalf("a changed inclusion proof of seq %d in %d verified", seq, size)
			}
		}

		from := 1 + rng.Int64N(size)
		old, err := l.TreeRoot(from)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := l.ProveConsistency(from, size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckTree(cp, size, root, from, old); err != nil {
			t.Fatalf("consistency %d → %d: %v", from, size, err)
		}
		if len(cp) > 0 {
			bad := append(tlog.TreeProof(nil), cp...)
			bad[rng.IntN(len(bad))][rng.IntN(32)] ^= 1 << rng.IntN(8)
			if tlog.CheckTree(bad, size, root, from, old) == nil {
				t.Fatalf("a changed consistency proof %d → %d verified", from, size)
			}
		}
	}
}

// TestTreeBounds: sizes, leaves and tiles beyond the tree are ErrBeyondTree.
func TestTreeBounds(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 9) // 10 events
	for name, err := range map[string]error{
		"root of 11":         second(l.TreeRoot(11)),
		"root of 0":          second(l.TreeRoot(0)),
		"leaf 0":             second(l.LeafHash(0)),
		"leaf 11":            second(l.LeafHash(11)),
		"seq 11 in 10":       second(l.ProveInclusion(11, 10)),
		"seq 5 in 4":         second(l.ProveInclusion(5, 4)),
		"consistency 0 → 5":  second(l.ProveConsistency(0, 5)),
		"consistency 6 → 5":  second(l.ProveConsistency(6, 5)),
		"consistency 5 → 11": second(l.ProveConsistency(5, 11)),
		"tile 0/0.p/11":      second(l.TileData(tlog.Tile{H: 8, L: 0, N: 0, W: 11})),
		"tile 0/1.p/1":       second(l.TileData(tlog.Tile{H: 8, L: 0, N: 1, W: 1})),
		"tile 1/0.p/1":       second(l.TileData(tlog.Tile{H: 8, L: 1, N: 0, W: 1})),
		"tile 0/huge":        second(l.TileData(tlog.Tile{H: 8, L: 0, N: 1 << 60, W: 256})),
		"tile 0/max":         second(l.TileData(tlog.Tile{H: 8, L: 0, N: math.MaxInt64, W: 256})),
	} {
		if !errors.Is(err, ErrBeyondTree) {
			t.Errorf("%s: %v, want ErrBeyondTree", name, err)
		}
	}
	if p, err := l.ProveConsistency(7, 7); err != nil || len(p) != 0 {
		t.Errorf("consistency 7 → 7: %v %v, want an empty proof", p, err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestTreeTiles: a level-0 tile is the leaf hashes in order, and a level-1
// tile the roots of each full 256-leaf subtree; a partial tile is a prefix of
// the full one it grows into.
func TestTreeTiles(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 600) // 601 events
	full, err := l.TileData(tlog.Tile{H: 8, L: 0, N: 1, W: 256})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 256 {
		leaf, _ := l.LeafHash(uint64(256 + i + 1))
		if !bytes.Equal(full[32*i:32*i+32], leaf[:]) {
			t.Fatalf("tile 0/1 entry %d is not leaf %d", i, 256+i)
		}
	}
	part, err := l.TileData(tlog.Tile{H: 8, L: 0, N: 2, W: 89})
	if err != nil {
		t.Fatal(err)
	}
	if len(part) != 89*32 {
		t.Fatalf("partial tile of %d bytes", len(part))
	}
	up, err := l.TileData(tlog.Tile{H: 8, L: 1, N: 0, W: 2})
	if err != nil {
		t.Fatal(err)
	}
	root256, _ := l.TreeRoot(256)
	if !bytes.Equal(up[:32], root256[:]) {
		t.Fatal("tile 1/0 entry 0 is not the root of the first 256 leaves")
	}
	if _, err := l.TileData(tlog.Tile{H: 8, L: 1, N: 0, W: 3}); !errors.Is(err, ErrBeyondTree) {
		t.Fatalf("tile 1/0.p/3 of a 601-event tree: %v", err)
	}
}

// TestTreeCheckpoint: the checkpoint is a C2SP signed note that verifies
// under the node's verifier key, names the origin, size and root, and is
// signed once per tip.
func TestTreeCheckpoint(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 4)
	head, signed, err := l.TreeCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatalf("open the checkpoint: %v\n%s", err, signed)
	}
	want := fmt.Sprintf("civnode/%s\n5\n%s\n", l.NodeDID(), base64.StdEncoding.EncodeToString(head.Root[:]))
	if n.Text != want || head.Size != 5 {
		t.Fatalf("checkpoint text %q, want %q", n.Text, want)
	}
	if !strings.HasPrefix(l.VerifierKey(), "civnode/"+l.NodeDID()+"+") {
		t.Fatalf("verifier key %q", l.VerifierKey())
	}
	_, again, _ := l.TreeCheckpoint()
	if !bytes.Equal(again, signed) {
		t.Fatal("the checkpoint of one tip was signed twice")
	}
	appendN(t, l, 1)
	head6, next, _ := l.TreeCheckpoint()
	if head6.Size != 6 || bytes.Equal(next, signed) {
		t.Fatal("the checkpoint did not follow the tip")
	}
	_, at5, err := l.TreeCheckpointAt(5)
	if err != nil {
		t.Fatal(err)
	}
	if n5, err := note.Open(at5, note.VerifierList(v)); err != nil || n5.Text != want {
		t.Fatalf("checkpoint at 5: %v %+v", err, n5)
	}
	// Another key's verifier refuses it.
	other := openMem(t, Options{Key: seedKey(t, strings.Repeat("07", 32))})
	ov, _ := note.NewVerifier(other.VerifierKey())
	if _, err := note.Open(signed, note.VerifierList(ov)); err == nil {
		t.Fatal("another node's key verified the checkpoint")
	}
}

// TestTreeBuiltForOldDirectory: a data directory written before the tree
// (no stored hashes, no tree size) opens, builds its tree with progress, and
// has the root it would have had, and appends go on from there.
func TestTreeBuiltForOldDirectory(t *testing.T) {
	dir := t.TempDir()
	key := seedKey(t, vectorSeed)
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, treeBuildBatch+40) // more than one build batch
	want, err := l.TreeHead()
	if err != nil {
		t.Fatal(err)
	}
	// Make it old: drop the tree, as a node from before it never wrote one.
	b := l.db.NewBatch()
	b.DeleteRange([]byte{spaceTree}, []byte{spaceTree + 1}, nil)
	b.Delete(metaTreeSizeKey, nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	l.Close()

	var calls []uint64
	l, err = Open(Options{Dir: dir, Key: key, OnTreeBuild: func(done, total uint64) {
		calls = append(calls, done)
		if total != uint64(want.Size) {
			t.Errorf("progress total %d, want %d", total, want.Size)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := l.TreeHead()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("rebuilt tree %d %x, want %d %x", got.Size, got.Root, want.Size, want.Root)
	}
	if len(calls) != 2 || calls[len(calls)-1] != uint64(want.Size) {
		t.Fatalf("progress %v, want two batches ending at %d", calls, want.Size)
	}
	appendN(t, l, 3)
	var leaves [][]byte
	for seq := uint64(1); seq <= l.Tip().Seq; seq++ {
		ev, _ := l.Event(seq)
		id, _ := hex.DecodeString(ev.ID)
		leaves = append(leaves, id)
	}
	head, _ := l.TreeHead()
	if head.Root != tlog.Hash(rfc9162Root(leaves)) {
		t.Fatal("appends after a build do not extend the built tree")
	}
}

// TestTreeSurvivesReopen: the frontier is read back at Open, so appends after
// a restart extend the same tree.
func TestTreeSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	key := seedKey(t, vectorSeed)
	for round := range 5 {
		l, err := Open(Options{Dir: dir, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 37+round)
		l.Close()
	}
	l, err := Open(Options{Dir: dir, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var leaves [][]byte
	for seq := uint64(1); seq <= l.Tip().Seq; seq++ {
		ev, _ := l.Event(seq)
		id, _ := hex.DecodeString(ev.ID)
		leaves = append(leaves, id)
	}
	head, err := l.TreeHead()
	if err != nil || head.Root != tlog.Hash(rfc9162Root(leaves)) {
		t.Fatalf("root after five restarts: %v %x", err, head.Root)
	}
}

// TestVerifyChecksTheStoredTree: a full verify holds the stored tree to the
// chain, so a changed stored hash is found even though every event is sound.
func TestVerifyChecksTheStoredTree(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 99)
	if _, err := l.Verify(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TreeHead(); err != nil { // caches the root the check must not trust
		t.Fatal(err)
	}
	// An inner node the root is hashed from: the root of the first 64 leaves.
	changeStoredHash(t, l, tlog.StoredHashIndex(6, 0))
	_, err := l.Verify(t.Context(), nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "merkle tree") {
		t.Fatalf("verify with a changed stored hash: %v, want ErrCorrupt naming the merkle tree", err)
	}
}

// changeStoredHash flips a bit of the stored hash at idx inside its chunk.
func changeStoredHash(t *testing.T, l *Log, idx int64) {
	t.Helper()
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceTree}, UpperBound: []byte{spaceTree + 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !it.SeekLT(treeKey(idx + 1)) {
		t.Fatalf("no chunk holds stored hash %d", idx)
	}
	key := bytes.Clone(it.Key())
	val := bytes.Clone(it.Value())
	it.Close()
	at := (idx - int64(u64(key[1:]))) * 32
	if at+32 > int64(len(val)) {
		t.Fatalf("chunk at %x has no stored hash %d", key, idx)
	}
	val[at] ^= 1
	if err := l.db.Set(key, val, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

// TestTreeChunks: a group commit stores its events' hashes in a few chunk
// keys, not one key per hash, and every stored hash is found in them.
func TestTreeChunks(t *testing.T) {
	l := openMem(t, Options{})
	appendN(t, l, 299) // groups of 64 drafts, then 43
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceTree}, UpperBound: []byte{spaceTree + 1}})
	if err != nil {
		t.Fatal(err)
	}
	keys := 0
	for valid := it.First(); valid; valid = it.Next() {
		keys++
	}
	it.Close()
	if keys != 6 { // the genesis, four groups of 64 and one of 43
		t.Fatalf("%d chunk keys for 300 events in 6 batches, want 6", keys)
	}
	all := make([]int64, tlog.StoredHashCount(300))
	for i := range all {
		all[i] = int64(i)
	}
	if _, err := l.treeReader().ReadHashes(all); err != nil {
		t.Fatal(err)
	}
	if _, err := l.treeReader().ReadHashes([]int64{tlog.StoredHashCount(300)}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a stored hash beyond the tree: %v, want ErrCorrupt", err)
	}
}
