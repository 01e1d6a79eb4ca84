package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/civnode/civnode/transparency"
)

// TestPublishDirWitnessed: a node with a witness publishing continuously
// (serve --witness --publish-dir) under writes: every checkpoint the
// directory ever holds carries the witness's cosignature, and every tree
// the witness has cosigned has its bundles in the directory already (the
// submitter's ceiling is the published tree). Once the writes stop, the
// directory reaches the node's tip and a mirror that requires the witness
// takes it.
func TestPublishDirWitnessed(t *testing.T) {
	needBinary(t)
	root := t.TempDir()
	pub := filepath.Join(root, "published")
	w := startNode(t, root+"/witness")
	wkey := verifierKeyOfWitness(t, w)
	w.stop(t)
	a := startNode(t, root+"/a")
	vkey := summaryOf(t, a.url, a.token).VerifierKey
	a.stop(t)
	w = startNodeArgs(t, root+"/witness", "--witness-for", vkey)
	a = startNodeArgs(t, root+"/a", "--witness", wkey+"@"+w.url+"/v1/witness", "--publish-dir", pub, "--publish-interval", "50ms", "--registry-url", "")
	witnessName := strings.Fields(wkey)[0]
	witnessName = witnessName[:strings.IndexByte(witnessName, '+')]

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	p := &process{url: a.url, token: a.token}
	client := &http.Client{Timeout: 10 * time.Second}
	for i := range 4 {
		wg.Go(func() {
			for j := 0; ctx.Err() == nil; j++ {
				bootstrapOnce(client, p, fmt.Sprintf("pw-%d-%d", i, j))
			}
		})
	}
	samples, cosigned := 0, 0
	for ctx.Err() == nil {
		// The witnessed tree first: its bundles were published before it
		// was submitted.
		if s := summaryOf(t, a.url, a.token); s.Witnessed != nil && s.Witnessed.TreeSize > 0 {
			ws := s.Witnessed.TreeSize
			rel := transparency.BundlePath((ws-1)/transparency.BundleSize, int((ws-1)%transparency.BundleSize)+1)
			if _, err := os.Stat(filepath.Join(pub, filepath.FromSlash(rel))); err != nil {
				t.Fatalf("the witness cosigned a tree of %d events whose bundle %s is not published: %v", ws, rel, err)
			}
			cosigned++
		}
		if b, err := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile)); err == nil {
			samples++
			if !strings.Contains(string(b), "\n— "+witnessName+" ") {
				t.Fatalf("the published checkpoint carries no cosignature of %s:\n%s", witnessName, b)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	if samples == 0 || cosigned == 0 {
		t.Fatalf("%d checkpoints and %d witnessed trees sampled: the test saw nothing published", samples, cosigned)
	}
	tip := summaryOf(t, a.url, a.token).TreeSize
	waitFor(t, "the published checkpoint reaches the tip", func() (bool, string) {
		size := treeSizeIn(t, pub)
		return size >= tip, fmt.Sprintf("published %d, tip %d", size, tip)
	})
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer srv.Close()
	out, code := runBinary(t, "mirror", "--from", srv.URL, "--data-dir", filepath.Join(root, "mirror"), "--witness", wkey, "--once")
	if code != 0 {
		t.Fatalf("a mirror requiring the witness: exit %d\n%s", code, out)
	}
	t.Logf("%d checkpoints sampled, all cosigned; %d witnessed trees, all published; tip %d published and mirrored", samples, cosigned, tip)

	// transparency publish on the stopped node's data dir follows the same
	// rule: the chain grown past its witnessed tree (a write while started
	// without the witness), the checkpoint it writes is still the cosigned
	// one, and it says that the newest tree is not witnessed yet.
	a.stop(t)
	a = startNodeArgs(t, root+"/a", "--registry-url", "")
	if _, err := bootstrapOnce(client, &process{url: a.url, token: a.token}, "pw-unwitnessed"); err != nil {
		t.Fatal(err)
	}
	a.stop(t)
	vout, code := runBinary(t, "verify", "--data-dir", root+"/a")
	m := verifiedLine.FindStringSubmatch(vout)
	if code != 0 || m == nil {
		t.Fatalf("verify: exit %d\n%s", code, vout)
	}
	chain, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	pub2 := filepath.Join(root, "published-by-cli")
	out, code = runBinary(t, "transparency", "publish", "--dir", pub2, "--data-dir", root+"/a")
	if code != 0 {
		t.Fatalf("transparency publish: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(pub2, transparency.CheckpointFile))
	if err != nil || !strings.Contains(string(b), "\n— "+witnessName+" ") {
		t.Fatalf("transparency publish wrote a checkpoint without the cosignature (%v):\n%s\n%s", err, b, out)
	}
	if !strings.Contains(out, "is not witnessed yet") || treeSizeIn(t, pub2) >= chain {
		t.Fatalf("transparency publish: checkpoint of %d events, chain of %d; output:\n%s", treeSizeIn(t, pub2), chain, out)
	}
}
