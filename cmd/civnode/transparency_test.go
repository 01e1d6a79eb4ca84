package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/transparency"
)

// servedFile is a file of a publish directory as a test saw it.
type servedFile struct {
	info fs.FileInfo
	data []byte
}

// trPublished reads every file of a publish directory but publish's own
// lock, keyed by slash path.
func trPublished(t *testing.T, pub string) map[string]servedFile {
	t.Helper()
	files := map[string]servedFile{}
	err := filepath.WalkDir(pub, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(pub, path)
		if rel == transparency.LockFile {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = servedFile{info: info, data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// trTilePaths are the paths of tiles.
func trTilePaths(tiles []tlog.Tile) []string {
	var out []string
	for _, t := range tiles {
		out = append(out, transparency.TilePath(t))
	}
	return out
}

// requirePublished checks a publish directory against the node at url: the
// checkpoint and verifier key are the node's; every tile file holds what
// GET /v1/transparency/tile/… serves; the tiles of every tree size published
// (sizes) are there and nothing else is; and, read as an observer of a static
// host reads them (tlog.TileHashReader, which checks each tile against the
// signed root), the tiles give the checkpoint's root and inclusion proofs that
// the API's leaf hashes verify against.
func requirePublished(t *testing.T, pub, url, token string, sizes ...int64) {
	t.Helper()
	var sum transparency.Summary
	getJSON(t, url+"/v1/transparency", token, 200, &sum)
	files := trPublished(t, pub)
	if got := string(files[transparency.CheckpointFile].data); got != sum.Checkpoint {
		t.Fatalf("DIR/checkpoint %q, the node serves %q", got, sum.Checkpoint)
	}
	if got := string(files[transparency.VerifierKeyFile].data); got != sum.VerifierKey+"\n" {
		t.Fatalf("DIR/verifier-key %q, want %q", got, sum.VerifierKey+"\n")
	}
	seal, err := eventlog.ParseSeal(files[transparency.SealFile].data)
	if err != nil {
		t.Fatalf("DIR/seal: %v", err)
	}
	if seal.Checkpoint != sum.Checkpoint || seal.EventCount != uint64(sizes[len(sizes)-1]) {
		t.Fatalf("DIR/seal is of %d events with checkpoint %q, want the node's", seal.EventCount, seal.Checkpoint)
	}
	k, err := transparency.ParseKey(sum.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.VerifySeal(seal, k.DID, k.PublicKey()); err != nil {
		t.Fatalf("DIR/seal: %v", err)
	}
	var want []string
	prev := int64(0)
	for _, n := range sizes {
		want = append(want, trTilePaths(tlog.NewTiles(transparency.TileHeight, prev, n))...)
		want = append(want, trBundlePaths(prev, n)...)
		prev = n
	}
	slices.Sort(want)
	var got []string
	for rel, f := range files {
		switch {
		case rel == transparency.CheckpointFile || rel == transparency.VerifierKeyFile || rel == transparency.SealFile:
			continue
		case !strings.HasPrefix(rel, "tile/") && !strings.HasPrefix(rel, "events/"):
			t.Errorf("stray file %s in the publish directory", rel)
			continue
		}
		got = append(got, rel)
		if served := trGet(t, url+"/v1/transparency/"+rel, token); string(served) != string(f.data) {
			t.Errorf("%s: %d bytes differ from the %d the node serves", rel, len(f.data), len(served))
		}
		if f.info.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 for a static host", rel, f.info.Mode().Perm())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tiles and bundles published:\n%v\nwant those of tree sizes %v:\n%v", got, sizes, want)
	}

	tree := trOpen(t, sum.VerifierKey, []byte(sum.Checkpoint))
	if tree.N != sizes[len(sizes)-1] {
		t.Fatalf("the node's tree has %d events, want %d", tree.N, sizes[len(sizes)-1])
	}
	hr := tlog.TileHashReader(tree, dirTiles{pub})
	root, err := tlog.TreeHash(tree.N, hr)
	if err != nil || root != tree.Hash {
		t.Fatalf("root from the published tiles %v (%v), the checkpoint's %v", root, err, tree.Hash)
	}
	for _, i := range []int64{0, tree.N / 3, tree.N - 1} {
		var ans transparency.InclusionAnswer
		getJSON(t, fmt.Sprintf("%s/v1/transparency/proof/inclusion?seq=%d&tree_size=%d", url, i+1, tree.N), token, 200, &ans)
		leaf, err := tlog.ParseHash(ans.LeafHash)
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

// trBundlePaths are the paths of the event bundles a publish writes when
// the published tree grows from prev to n events.
func trBundlePaths(prev, n int64) []string {
	var out []string
	for k := prev / transparency.BundleSize; k*transparency.BundleSize < n; k++ {
		out = append(out, transparency.BundlePath(k, int(min(transparency.BundleSize, n-k*transparency.BundleSize))))
	}
	return out
}

var treeDirLine = regexp.MustCompile(`^published civnode/did:key:z6Mk\S+ tree size ([0-9]+), root \S+, to (\S+): (.*)\n$`)

// requirePublishLine checks publish's summary line: the tree size and what
// it says it wrote.
func requirePublishLine(t *testing.T, out string, size int64, what string) {
	t.Helper()
	m := treeDirLine.FindStringSubmatch(out)
	if m == nil || m[1] != fmt.Sprint(size) || m[3] != what {
		t.Fatalf("publish printed %q; want tree size %d and %q", out, size, what)
	}
}

// TestTransparencyPublish publishes a running node's tree through its API,
// then, with the node stopped, more of it from the data dir, and prints what
// each run wrote: every tile and the checkpoint, then the new tiles and the
// checkpoint moved, then nothing. Each time the directory is what the node
// serves, and an observer reading it as a static host gets the signed root.
// That a run rewrites no file of an earlier one is transparency's own test.
func TestTransparencyPublish(t *testing.T) {
	dir := trStoppedNode(t, 600)
	pub := filepath.Join(t.TempDir(), "log")

	p := startProcess(t, dir)
	first := tlog.NewTiles(transparency.TileHeight, 0, 600)
	out := trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	requirePublishLine(t, out, 600, fmt.Sprintf("%d tiles written, checkpoint written", len(first)))
	requirePublished(t, pub, p.url, p.token, 600)
	trStop(t, p)

	trAppend(t, dir, "more", 300)
	added := tlog.NewTiles(transparency.TileHeight, 600, 900)
	out = trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	requirePublishLine(t, out, 900, fmt.Sprintf("%d tiles written, checkpoint moved from tree size 600", len(added)))
	_, signed, _ := trTreeHead(t, dir)
	if got, _ := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile)); string(got) != string(signed) {
		t.Fatalf("DIR/checkpoint %q, the stopped node's is %q", got, signed)
	}

	p = startProcess(t, dir)
	requirePublished(t, pub, p.url, p.token, 600, 900)
	out = trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	requirePublishLine(t, out, 900, "already published, nothing to write")
}

// TestTransparencyPublishResumes: publish says how many tiles a run cut short
// left for it, after its checkpoint and without any. What such a run keeps
// and writes is transparency's own test.
func TestTransparencyPublishResumes(t *testing.T) {
	dir := trStoppedNode(t, 300)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	old, err := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	trAppend(t, dir, "more", 300)
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	added := tlog.NewTiles(transparency.TileHeight, 300, 600)

	// Undo the end of the second run, as a crash before its checkpoint would.
	if err := os.WriteFile(filepath.Join(pub, transparency.CheckpointFile), old, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(pub, filepath.FromSlash(transparency.TilePath(added[len(added)-1])))
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}
	out := trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	requirePublishLine(t, out, 600, fmt.Sprintf("1 tile written, checkpoint moved from tree size 300 (%d tiles already there from a run cut short)", len(added)-1))

	if err := os.Remove(filepath.Join(pub, transparency.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	out = trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	requirePublishLine(t, out, 600, fmt.Sprintf("0 tiles written, checkpoint written (%d tiles already there from a run cut short)", len(tlog.NewTiles(transparency.TileHeight, 0, 600))))
}

// TestTransparencyPublishRepairs: a tile of the published tree that was
// changed or lost after publish wrote it is named on stderr and counted in
// the summary line, with or without new events. That it is found, even when
// the parent tile was edited to agree with the changed one, and written again
// from the node's tree is transparency's own test.
func TestTransparencyPublishRepairs(t *testing.T) {
	dir := trStoppedNode(t, 600) // tile/0/000, tile/0/001, tile/0/002.p/88, tile/1/000.p/2
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	file := func(rel string) string { return filepath.Join(pub, filepath.FromSlash(rel)) }

	// Change a full tile and a parent tile; lose another full tile.
	for _, rel := range []string{"tile/0/000", "tile/1/000.p/2"} {
		tile, err := os.ReadFile(file(rel))
		if err != nil {
			t.Fatal(err)
		}
		tile[5] ^= 1
		if err := os.WriteFile(file(rel), tile, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(file("tile/0/001")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := trRun(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	if code != 0 {
		t.Fatalf("publish over changed tiles: exit %d\n%s", code, errOut)
	}
	requirePublishLine(t, out, 600, "already published, nothing to write; rewrote 3 tiles of the published tree that did not match the node's")
	for _, rel := range []string{"tile/1/000.p/2", "tile/0/000", "tile/0/001"} {
		if !strings.Contains(errOut, file(rel)+" did not match the node's tree") {
			t.Errorf("stderr does not name %s:\n%s", rel, errOut)
		}
	}

	// The same on a run that publishes new events.
	tile1, err := os.ReadFile(file("tile/0/001"))
	if err != nil {
		t.Fatal(err)
	}
	tile1[len(tile1)-1] ^= 1
	if err := os.WriteFile(file("tile/0/001"), tile1, 0o644); err != nil {
		t.Fatal(err)
	}
	trAppend(t, dir, "more", 300)
	out, errOut, code = trRun(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", dir)
	if code != 0 || !strings.Contains(errOut, file("tile/0/001")+" did not match") {
		t.Fatalf("publish of new events over a changed tile: exit %d\n%s", code, errOut)
	}
	requirePublishLine(t, out, 900, fmt.Sprintf("%d tiles written, checkpoint moved from tree size 600; rewrote 1 tile of the published tree that did not match the node's",
		len(tlog.NewTiles(transparency.TileHeight, 600, 900))))
}

// TestTransparencyPublishRefuses: a refused publish exits 1 saying why: a
// directory of another node's log, one that another publish is writing to.
// Which directories are refused, and that a refusal leaves them as they
// were, is transparency's own test.
func TestTransparencyPublishRefuses(t *testing.T) {
	base := trStoppedNode(t, 300)
	other := trStoppedNode(t, 10)
	pub := filepath.Join(t.TempDir(), "log")
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", base)

	trFails(t, 1, "signed by another key", "transparency", "publish", "--dir", pub, "--data-dir", other)
	unlock, err := transparency.LockDir(pub)
	if err != nil {
		t.Fatal(err)
	}
	trAppend(t, base, "main", 10)
	trFails(t, 1, "another civnode transparency publish is writing to this directory", "transparency", "publish", "--dir", pub, "--data-dir", base)
	unlock()
	trMust(t, "transparency", "publish", "--dir", pub, "--data-dir", base)
}

// TestTransparencyCommandLine: mistakes on the command line exit 2 before
// anything is read.
func TestTransparencyCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"transparency", "publish"}, "needs --dir DIR"},
		{[]string{"transparency", "publish", "--dir", "x", "extra"}, "unknown command"},
		{[]string{"transparency", "check", "--token", "t"}, "needs --state FILE"},
		{[]string{"transparency", "check", "--state", "s.json"}, "needs an owner or observer token"},
		{[]string{"transparency", "check", "--state", "s.json", "--token", "t", "--addr", "ftp://x"}, "want HOST:PORT or http(s)"},
		{[]string{"transparency", "check", "--state", "s.json", "--tiles", "http://x", "--token", "t"}, "not both"},
		{[]string{"transparency", "prove"}, "accepts 1 arg(s)"},
		{[]string{"transparency", "prove", "0"}, "an integer of at least 1"},
		{[]string{"transparency", "prove", "x7"}, "an integer of at least 1"},
		{[]string{"transparency", "prove", "7", "--tree-size", "0"}, "--tree-size must be at least 1"},
		{[]string{"transparency", "prove", "7", "--token", "t", "--data-dir", "d"}, "not both"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], " "), func(t *testing.T) {
			res := runCLI(t, nil, tt.args...)
			if res.code != 2 || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 naming %q", res.code, res.stderr, tt.want)
			}
		})
	}
}

// jsonOf decodes one JSON object.
func jsonOf(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
}
