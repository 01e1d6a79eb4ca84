package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/civnode/civnode/transparency"
)

// TestPublishDirKillUnderWrites: a node publishing continuously to a
// directory (serve --publish-dir, a short interval) is killed with SIGKILL
// at a random moment under writes, five times. After each kill the
// directory is one a mirror accepts (civnode mirror --once over HTTP, one
// mirror data dir for every round, which refuses a published log that went
// back), and its tree never shrank; after a restart the node publishes on
// from it. At the end a clean stop publishes every acknowledged write.
func TestPublishDirKillUnderWrites(t *testing.T) {
	needBinary(t)
	dir := filepath.Join(t.TempDir(), "data")
	pub := filepath.Join(t.TempDir(), "published")
	mirrorDir := filepath.Join(t.TempDir(), "mirror")
	srv := httptest.NewServer(http.FileServer(http.Dir(pub)))
	defer srv.Close()

	const rounds = 5
	var acked []ackedIdentity
	var published int64 // the tree of the published checkpoint after the last round
	for round := 1; round <= rounds; round++ {
		p := startProcess(t, dir, "--publish-dir", pub, "--publish-interval", "20ms", "--registry-url", "")
		killAfter := time.Duration(200+rand.IntN(1500)) * time.Millisecond
		got := bootstrapFor(t, p, round, killAfter)
		p.cmd.Process.Kill()
		if code := p.wait(t); code != -1 {
			t.Fatalf("round %d: killed process exit code %d, want -1\nstderr:\n%s", round, code, p.stderr)
		}
		acked = append(acked, got...)

		size := treeSizeIn(t, pub)
		if size < published {
			t.Fatalf("round %d: the published tree went back from %d to %d events", round, published, size)
		}
		out, code := runBinary(t, "mirror", "--from", srv.URL, "--data-dir", mirrorDir, "--once")
		if code != 0 {
			t.Fatalf("round %d: civnode mirror --once of the directory after SIGKILL: exit %d\n%s\nnode's stderr:\n%s", round, code, out, p.stderr)
		}
		t.Logf("round %d: SIGKILL after %v, %d writes acknowledged; published tree %d events, mirrored", round, killAfter, len(got), size)
		published = size
	}

	// A clean stop publishes the tail: every acknowledged write is in the
	// directory, and the mirror takes it.
	p := startProcess(t, dir, "--publish-dir", pub, "--publish-interval", "20ms", "--registry-url", "")
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d\nstderr:\n%s", code, p.stderr)
	}
	out, code := runBinary(t, "verify", "--data-dir", dir)
	m := verifiedLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	tip, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if size := treeSizeIn(t, pub); size != tip {
		t.Fatalf("after a clean stop the published tree has %d events, the chain %d", size, tip)
	}
	if want := int64(1 + 2*len(acked)); tip < want {
		t.Fatalf("the chain has %d events, want at least %d for %d acknowledged writes", tip, want, len(acked))
	}
	if out, code := runBinary(t, "mirror", "--from", srv.URL, "--data-dir", mirrorDir, "--once"); code != 0 {
		t.Fatalf("civnode mirror --once after the clean stop: exit %d\n%s", code, out)
	}
}

// bootstrapFor bootstraps identities from four writers for d, then returns
// those acknowledged; a write cut short by the kill is not.
func bootstrapFor(t *testing.T, p *process, round int, d time.Duration) []ackedIdentity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	var mu sync.Mutex
	var acked []ackedIdentity
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				ack, err := bootstrapOnce(client, p, fmt.Sprintf("pk-%d-%d-%d", round, w, i))
				if err != nil {
					continue // cut short by the deadline or not yet writable: not acknowledged
				}
				mu.Lock()
				acked = append(acked, ack)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked
}

// treeSizeIn is the tree size of the checkpoint in the publish
// directory pub, 0 when there is none.
func treeSizeIn(t *testing.T, pub string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var origin string
	var size int64
	if _, err := fmt.Sscanf(string(b), "%s\n%d\n", &origin, &size); err != nil {
		t.Fatalf("the published checkpoint %q: %v", b, err)
	}
	return size
}
