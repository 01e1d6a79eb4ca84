package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/transparency"
)

// transparency publish through a running node's API, right after a write
// its lagging witness has not cosigned yet, writes no checkpoint that is not
// witnessed: every checkpoint it writes carries the witness's cosignature.
// --unwitnessed writes the plain one.
func TestPublishThroughTheAPIWaitsForTheWitnesses(t *testing.T) {
	root := t.TempDir()
	a, wkey, _ := startWithLaggingWitness(t, root)
	postOK(t, a.url, a.token, "/v1/civilization/bootstrap-identity", `{"display_name":"Ada Lovelace","public_id":"ada"}`)

	pub := filepath.Join(root, "pub")
	witnessName, _, _ := strings.Cut(wkey, "+")
	for i := range 5 {
		appendMission(t, a, "while the witness lags "+string(rune('a'+i)))
		r := runCLI(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", root+"/a")
		if r.code != 0 {
			t.Fatalf("publish: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "\n— "+witnessName+" ") {
			t.Fatalf("publish %d wrote a checkpoint the witness did not cosign:\n%s", i, b)
		}
	}
	appendMission(t, a, "once more")
	r := runCLI(t, nil, "transparency", "publish", "--dir", pub, "--data-dir", root+"/a", "--unwitnessed")
	if r.code != 0 {
		t.Fatalf("publish --unwitnessed: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(pub, transparency.CheckpointFile))
	if err != nil || strings.Contains(string(b), "\n— "+witnessName+" ") {
		t.Fatalf("publish --unwitnessed wrote %q (%v), want the plain checkpoint", b, err)
	}
}
