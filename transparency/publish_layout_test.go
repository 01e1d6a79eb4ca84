package transparency

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
)

// publishedFile is a file of a publish directory as a test saw it.
type publishedFile struct {
	info fs.FileInfo
	data []byte
}

// readPublished reads every file of a publish directory but Publish's own
// lock, keyed by slash path.
func readPublished(t *testing.T, pub string) map[string]publishedFile {
	t.Helper()
	files := map[string]publishedFile{}
	err := filepath.WalkDir(pub, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(pub, path)
		if rel == LockFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = publishedFile{info: info, data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func tilePaths(tiles []tlog.Tile) []string {
	var out []string
	for _, t := range tiles {
		out = append(out, TilePath(t))
	}
	return out
}

// bundlePaths are the paths of the event bundles a publish writes when the
// published tree grows from prev to n events.
func bundlePaths(prev, n int64) []string {
	var out []string
	for k := prev / BundleSize; k*BundleSize < n; k++ {
		out = append(out, BundlePath(k, int(min(BundleSize, n-k*BundleSize))))
	}
	return out
}

// dirTiles reads hash tiles from a publish directory, as an observer of a
// static host reads them.
type dirTiles struct{ dir string }

func (d dirTiles) Height() int { return TileHeight }

func (d dirTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		b, err := os.ReadFile(filepath.Join(d.dir, filepath.FromSlash(TilePath(t))))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func (dirTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// requirePublished checks a publish directory against the store's log: the
// checkpoint is the log's, of its whole tree, and the seal's; the verifier
// key is the log's; every tile file holds the log's tile and every bundle
// the log's events as stored, one a line; the tiles and bundles of every tree
// size published (sizes) are there, mode 0644 for a static host, and nothing
// else is; and, read as an observer of a static host reads them
// (tlog.TileHashReader, which checks each tile against the signed root), the
// tiles give the checkpoint's root and inclusion proofs of the log's leaves.
func requirePublished(t *testing.T, pub string, s *store, sizes ...int64) {
	t.Helper()
	l := s.l
	files := readPublished(t, pub)
	k, err := ParseKey(l.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	if got := string(files[VerifierKeyFile].data); got != l.VerifierKey()+"\n" {
		t.Fatalf("DIR/verifier-key %q, want %q", got, l.VerifierKey()+"\n")
	}
	head, err := k.OpenCheckpoint(files[CheckpointFile].data)
	n := sizes[len(sizes)-1]
	if err != nil || head.Size != n || head.Size != int64(l.Tip().Seq) {
		t.Fatalf("DIR/checkpoint of %d events (%v), want the log's %d", head.Size, err, n)
	}
	if root, err := l.TreeRoot(n); err != nil || root != head.Root {
		t.Fatalf("DIR/checkpoint's root %v, the log's %v (%v)", head.Root, root, err)
	}
	seal, err := eventlog.ParseSeal(files[SealFile].data)
	if err != nil {
		t.Fatalf("DIR/seal: %v", err)
	}
	if seal.Checkpoint != string(files[CheckpointFile].data) || seal.EventCount != uint64(n) {
		t.Fatalf("DIR/seal is of %d events with checkpoint %q, want the published one", seal.EventCount, seal.Checkpoint)
	}
	if _, err := eventlog.VerifySeal(seal, k.DID, k.PublicKey()); err != nil {
		t.Fatalf("DIR/seal: %v", err)
	}

	var want []string
	tiles := map[string]tlog.Tile{}
	prev := int64(0)
	for _, size := range sizes {
		for _, tl := range tlog.NewTiles(TileHeight, prev, size) {
			tiles[TilePath(tl)] = tl
			want = append(want, TilePath(tl))
		}
		want = append(want, bundlePaths(prev, size)...)
		prev = size
	}
	slices.Sort(want)
	var got []string
	for rel, f := range files {
		switch {
		case rel == CheckpointFile || rel == VerifierKeyFile || rel == SealFile:
			continue
		case !strings.HasPrefix(rel, "tile/") && !strings.HasPrefix(rel, "events/"):
			t.Errorf("stray file %s in the publish directory", rel)
			continue
		}
		got = append(got, rel)
		if f.info.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 for a static host", rel, f.info.Mode().Perm())
		}
		if tl, ok := tiles[rel]; ok {
			if data, err := l.TileData(tl); err != nil || !bytes.Equal(data, f.data) {
				t.Errorf("%s: %d bytes differ from the log's tile (%v)", rel, len(f.data), err)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tiles and bundles published:\n%v\nwant those of tree sizes %v:\n%v", got, sizes, want)
	}
	for b := int64(0); b*BundleSize < n; b++ {
		w := min(BundleSize, n-b*BundleSize)
		var stored bytes.Buffer
		err := l.ScanRaw(context.Background(), uint64(b*BundleSize)+1, uint64(b*BundleSize+w), func(_ uint64, raw []byte) error {
			stored.Write(raw)
			stored.WriteByte('\n')
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rel := BundlePath(b, int(w))
		if !bytes.Equal(files[rel].data, stored.Bytes()) {
			t.Errorf("%s: not the log's events as stored, one a line", rel)
		}
	}

	tree := tlog.Tree{N: head.Size, Hash: head.Root}
	hr := tlog.TileHashReader(tree, dirTiles{pub})
	if root, err := tlog.TreeHash(tree.N, hr); err != nil || root != tree.Hash {
		t.Fatalf("root from the published tiles %v (%v), the checkpoint's %v", root, err, tree.Hash)
	}
	for _, i := range []int64{0, tree.N / 3, tree.N - 1} {
		leaf, err := l.LeafHash(uint64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		proof, err := tlog.ProveRecord(tree.N, i, hr)
		if err != nil {
			t.Fatalf("prove leaf %d from the published tiles: %v", i, err)
		}
		if err := tlog.CheckRecord(proof, tree.N, tree.Hash, i, leaf); err != nil {
			t.Fatalf("leaf %d: the proof from the published tiles does not verify: %v", i, err)
		}
	}
}

// TestPublishLayout: the first run writes every tile and bundle of the tree,
// the checkpoint, the seal and the verifier key; the second writes exactly
// tlog.NewTiles from the old size to the new and their bundles, leaves every
// file of the first run as it was (same inode, same time, same bytes), and
// moves the checkpoint; a third, with nothing new, writes nothing. Each time
// the directory is the log's.
func TestPublishLayout(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	s := newStore(t, key, 600)
	pub := filepath.Join(t.TempDir(), "log")

	first := tlog.NewTiles(TileHeight, 0, 600)
	p := s.publish(t, pub)
	if p.Old.Size != 0 || p.Head.Size != 600 || p.Written != len(first) || p.Kept != 0 || !p.CheckpointWritten ||
		p.Bundles != len(bundlePaths(0, 600)) || p.Origin != "civnode/"+s.l.NodeDID() {
		t.Fatalf("first publish: %+v", p)
	}
	requirePublished(t, pub, s, 600)
	if fi, err := os.Stat(pub); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("the publish directory: %v %v, want mode 0755", fi, err)
	}
	before := readPublished(t, pub)

	s.add(t, "more", 300)
	added := tlog.NewTiles(TileHeight, 600, 900)
	p = s.publish(t, pub)
	if p.Old.Size != 600 || p.Head.Size != 900 || p.Written != len(added) || !p.CheckpointWritten || p.Repaired != 0 {
		t.Fatalf("second publish: %+v", p)
	}
	after := readPublished(t, pub)
	for rel, f := range before {
		if rel == CheckpointFile || rel == SealFile {
			continue
		}
		g, ok := after[rel]
		if !ok || !os.SameFile(f.info, g.info) || !g.info.ModTime().Equal(f.info.ModTime()) || !bytes.Equal(g.data, f.data) {
			t.Errorf("%s was rewritten or removed by the second publish", rel)
		}
	}
	var fresh []string
	for rel := range after {
		if _, ok := before[rel]; !ok {
			fresh = append(fresh, rel)
		}
	}
	slices.Sort(fresh)
	if want := slices.Sorted(slices.Values(append(tilePaths(added), bundlePaths(600, 900)...))); !slices.Equal(fresh, want) {
		t.Fatalf("the second publish added %v, want the new tiles and bundles %v", fresh, want)
	}
	requirePublished(t, pub, s, 600, 900)

	p = s.publish(t, pub)
	if p.Old.Size != 900 || p.Head.Size != 900 || p.Written != 0 || p.Kept != 0 || p.Bundles != 0 || p.CheckpointWritten {
		t.Fatalf("publish with nothing new: %+v", p)
	}
	for rel, f := range readPublished(t, pub) {
		if g := after[rel]; !os.SameFile(f.info, g.info) || !bytes.Equal(f.data, g.data) {
			t.Errorf("%s changed in a publish with nothing new", rel)
		}
	}
}

// TestPublishResumes: a publish cut short between its tiles and its
// checkpoint leaves the old checkpoint, some of the new tiles and temporary
// files; the next run writes the missing tiles, keeps the others, clears the
// temporary files and ends with the new checkpoint. A directory of tiles
// without any checkpoint (a first run cut short) is completed the same way.
func TestPublishResumes(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	s := newStore(t, key, 300)
	pub := filepath.Join(t.TempDir(), "log")
	s.publish(t, pub)
	old, err := os.ReadFile(filepath.Join(pub, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	s.add(t, "more", 300)
	s.publish(t, pub)
	added := tlog.NewTiles(TileHeight, 300, 600)

	// Undo the end of the second run, as a crash before its checkpoint would.
	if err := os.WriteFile(filepath.Join(pub, CheckpointFile), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(pub, filepath.FromSlash(TilePath(added[len(added)-1])))); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(pub, TmpDir, ".tmp-checkpoint-12345")
	if err := os.MkdirAll(filepath.Dir(stray), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stray, []byte("half a checkp"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := s.publish(t, pub)
	if p.Old.Size != 300 || p.Head.Size != 600 || p.Written != 1 || p.Kept != len(added)-1 || !p.CheckpointWritten {
		t.Fatalf("publish after a run cut short: %+v", p)
	}
	if _, err := os.Stat(filepath.Join(pub, TmpDir)); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the publish: %v", TmpDir, err)
	}

	if err := os.Remove(filepath.Join(pub, CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	p = s.publish(t, pub)
	if p.Old.Size != 0 || p.Written != 0 || p.Kept != len(tlog.NewTiles(TileHeight, 0, 600)) || !p.CheckpointWritten {
		t.Fatalf("publish over a first run cut short: %+v", p)
	}
	requirePublished(t, pub, s, 300, 600)
}

// TestPublishRepairs: a tile of the published tree that was changed or lost
// after Publish wrote it is found by the next run, with or without new
// events, reported, and written again from the log's tree, even when the
// parent tile was edited to agree with the changed one.
func TestPublishRepairs(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	s := newStore(t, key, 600) // tile/0/000, tile/0/001, tile/0/002.p/88, tile/1/000.p/2
	pub := filepath.Join(t.TempDir(), "log")
	s.publish(t, pub)
	file := func(rel string) string { return filepath.Join(pub, filepath.FromSlash(rel)) }
	publish := func() (Published, []string) {
		t.Helper()
		var repaired []string
		p, err := Publish(context.Background(), LogSource(s.l, s.dir), pub, PublishOptions{Repaired: func(path string) { repaired = append(repaired, path) }})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(repaired)
		return p, repaired
	}

	// Change a full tile and make its parent hold the changed tile's hash;
	// lose another full tile.
	tile0, err := os.ReadFile(file("tile/0/000"))
	if err != nil {
		t.Fatal(err)
	}
	tile0[5] ^= 1
	hs := make([]tlog.Hash, 256)
	for i := range hs {
		copy(hs[i][:], tile0[i*tlog.HashSize:])
	}
	for len(hs) > 1 {
		for i := range len(hs) / 2 {
			hs[i] = tlog.NodeHash(hs[2*i], hs[2*i+1])
		}
		hs = hs[:len(hs)/2]
	}
	parent, err := os.ReadFile(file("tile/1/000.p/2"))
	if err != nil {
		t.Fatal(err)
	}
	copy(parent, hs[0][:])
	for rel, b := range map[string][]byte{"tile/0/000": tile0, "tile/1/000.p/2": parent} {
		if err := os.WriteFile(file(rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(file("tile/0/001")); err != nil {
		t.Fatal(err)
	}
	p, repaired := publish()
	want := []string{file("tile/0/000"), file("tile/0/001"), file("tile/1/000.p/2")}
	if p.Repaired != 3 || p.Written != 0 || p.CheckpointWritten || !slices.Equal(repaired, want) {
		t.Fatalf("publish over changed tiles: %+v, repaired %v; want %v", p, repaired, want)
	}
	requirePublished(t, pub, s, 600)

	// The same on a run that publishes new events.
	tile1, err := os.ReadFile(file("tile/0/001"))
	if err != nil {
		t.Fatal(err)
	}
	tile1[len(tile1)-1] ^= 1
	if err := os.WriteFile(file("tile/0/001"), tile1, 0o644); err != nil {
		t.Fatal(err)
	}
	s.add(t, "more", 300)
	p, repaired = publish()
	if p.Repaired != 1 || p.Written != len(tlog.NewTiles(TileHeight, 600, 900)) || !p.CheckpointWritten ||
		!slices.Equal(repaired, []string{file("tile/0/001")}) {
		t.Fatalf("publish of new events over a changed tile: %+v, repaired %v", p, repaired)
	}
	requirePublished(t, pub, s, 600, 900)
}

// TestPublishRefuses: one directory is one node's log, and the published log
// never goes back: Publish refuses a checkpoint of another key, of a larger
// tree, of a tree of the same size with another root, and of a tree the
// log's does not extend, each time leaving the directory as it was; and it
// refuses to run beside another holder of the directory's lock.
func TestPublishRefuses(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	base := newStore(t, key, 300)
	older, fork := base.copy(t), base.copy(t) // 300 events
	base.add(t, "main", 100)                  // 400
	fork.add(t, "fork", 100)                  // 400, other events
	other := newStore(t, otherKey, 10)

	pub := filepath.Join(t.TempDir(), "log")
	base.publish(t, pub)
	before := readPublished(t, pub)
	refused := func(s *store, says string) {
		t.Helper()
		if p, err := Publish(context.Background(), LogSource(s.l, s.dir), pub, PublishOptions{}); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("publish: %+v %v; want a refusal saying %q", p, err, says)
		}
	}
	refused(other, "the checkpoint is signed by another key")
	refused(older, "holds a tree of 400 events, the node's has 300: publishing it would roll the published log back")
	refused(fork, "holds a tree of 400 events with root")
	fork.add(t, "fork", 50) // 450: larger, but not an extension
	refused(fork, "the node's tree of 450 events does not extend the tree of 400 events")

	unlock, err := LockDir(pub)
	if err != nil {
		t.Fatal(err)
	}
	base.add(t, "main", 10)
	refused(base, "another civnode transparency publish is writing to this directory")
	unlock()

	after := readPublished(t, pub)
	if len(after) != len(before) {
		t.Fatalf("a refused publish changed the directory: %d files, then %d", len(before), len(after))
	}
	for rel, f := range before {
		if g := after[rel]; !os.SameFile(f.info, g.info) || !bytes.Equal(g.data, f.data) {
			t.Errorf("a refused publish changed %s", rel)
		}
	}
	if p := base.publish(t, pub); p.Old.Size != 400 || p.Head.Size != 410 {
		t.Fatalf("publish after the refusals: %+v", p)
	}
	requirePublished(t, pub, base, 400, 410)
}
