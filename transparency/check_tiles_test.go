package transparency

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evidenceWant is one piece of evidence Check must have written: the problem
// and the size of the tree the host served.
type evidenceWant struct {
	problem    string
	servedSize int64
}

// requireEvidence requires that Check kept the stored state and that every
// detection so far left its own evidence file beside it, mode 0600, each
// whole: the stored checkpoint and the one the host served, signed by the
// stored key (by another for another_key), and named in the file's problem.
// Nothing is overwritten, so an earlier fork's checkpoints survive a later
// rollback.
func requireEvidence(t *testing.T, state string, stored *State, wants ...evidenceWant) {
	t.Helper()
	if st, err := loadState(state); err != nil || st.Checkpoint != stored.Checkpoint || st.VerifierKey != stored.VerifierKey {
		t.Fatalf("Check changed the state after finding %v: %+v %v", wants, st, err)
	}
	k, err := ParseKey(stored.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	storedHead, err := k.OpenCheckpoint([]byte(stored.Checkpoint))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(state + ".evidence-*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(wants) {
		t.Fatalf("evidence files %q, want one for each of %v", files, wants)
	}
	seen := map[string]bool{}
	for _, w := range wants {
		found := ""
		for _, path := range files {
			if seen[path] || !strings.Contains(filepath.Base(path), "-"+w.problem) {
				continue
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", path, fi.Mode().Perm())
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Problem          string `json:"problem"`
				VerifierKey      string `json:"verifier_key"`
				StoredCheckpoint string `json:"stored_checkpoint"`
				ServedCheckpoint string `json:"served_checkpoint"`
			}
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("evidence %s: %v", path, err)
			}
			if ev.Problem != w.problem || ev.StoredCheckpoint != stored.Checkpoint || ev.VerifierKey != stored.VerifierKey {
				t.Fatalf("evidence %s: %s", path, b)
			}
			if w.problem == "another_key" {
				if _, err := k.OpenCheckpoint([]byte(ev.ServedCheckpoint)); !errors.Is(err, ErrAnotherKey) {
					t.Fatalf("evidence %s: the served checkpoint opens with the stored key (%v)", path, err)
				}
			} else {
				served, err := k.OpenCheckpoint([]byte(ev.ServedCheckpoint))
				if err != nil {
					t.Fatalf("evidence %s: %v", path, err)
				}
				if served.Size != w.servedSize {
					continue
				}
				if served == storedHead {
					t.Fatalf("evidence %s of %s: the served tree is the stored one", path, w.problem)
				}
			}
			found = path
			break
		}
		if found == "" {
			t.Fatalf("no evidence of %s serving %d events among %q", w.problem, w.servedSize, files)
		}
		seen[found] = true
	}
}

// TestCheckStaticHosts runs Check as a monitor would against static hosts
// serving what Publish wrote from Pebble stores, over HTTP: the first run
// trusts the verifier-key file and stores the key and checkpoint (mode
// 0600); a run after more events proves the new tree consistent from the
// tiles alone and stores it; then the same state file meets hosts of stores
// that share the key but not the history — a copy that diverged at the same
// size and at a larger one (a fork), an older copy (a rollback) — and of
// another node: each is its problem and sentinel, keeps the stored state and
// leaves its own evidence. A host whose tiles do not match its checkpoint is
// an error that proves nothing and keeps the state. The original host still
// checks clean afterwards.
func TestCheckStaticHosts(t *testing.T) {
	ctx := context.Background()
	_, key, _ := ed25519.GenerateKey(nil)
	_, otherKey, _ := ed25519.GenerateKey(nil)
	base := newStore(t, key, 300)
	older, fork := base.copy(t), base.copy(t)
	state := filepath.Join(t.TempDir(), "static.json")
	opts := CheckOptions{State: state}
	check := func(c *Client) (Report, error) { return Check(ctx, TilesHost(c), c.Base(), opts) }

	pub := filepath.Join(t.TempDir(), "log")
	base.publish(t, pub)
	host := serveDir(t, pub)
	rep, err := check(host)
	if err != nil || rep.Result != "trusted" || rep.TreeSize != 300 || rep.VerifierKey != base.l.VerifierKey() {
		t.Fatalf("first check: %+v %v", rep, err)
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file after the first check: %v %v, want mode 0600", fi, err)
	}
	published, _ := os.ReadFile(filepath.Join(pub, CheckpointFile))
	if st, err := loadState(state); err != nil || st.VerifierKey != base.l.VerifierKey() || st.Checkpoint != string(published) || st.URL != host.Base() {
		t.Fatalf("state after the first check %+v %v, want the host's key and checkpoint", st, err)
	}

	base.add(t, "more", 300)
	base.publish(t, pub)
	rep, err = check(host)
	if err != nil || rep.Result != "consistent" || rep.OldSize != 300 || rep.TreeSize != 600 || host.Transferred() <= 0 {
		t.Fatalf("check of the grown log: %+v %v", rep, err)
	}
	published, _ = os.ReadFile(filepath.Join(pub, CheckpointFile))
	stored, err := loadState(state)
	if err != nil || stored.Checkpoint != string(published) {
		t.Fatalf("stored checkpoint %+v %v, the host's is %q", stored, err, published)
	}
	if rep, err := check(host); err != nil || rep.Result != "unchanged" || rep.TreeSize != 600 || rep.RootHash == "" {
		t.Fatalf("check with nothing new: %+v %v", rep, err)
	}

	var wants []evidenceWant
	refused := func(name string, s *store, result string, is error, size int64, says string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "log")
		s.publish(t, dir)
		rep, err := check(serveDir(t, dir))
		if !errors.Is(err, is) || rep.Result != result || rep.TreeSize != size || rep.OldSize != 600 ||
			!strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "what the node served is in "+rep.Evidence) {
			t.Fatalf("%s: %+v %v; want %s saying %q", name, rep, err, result, says)
		}
		wants = append(wants, evidenceWant{result, size})
		requireEvidence(t, state, stored, wants...)
	}
	fork.add(t, "fork", 300)
	refused("a fork of the same size", fork, "forked", ErrForked, 600, "the log forked: the node signed a tree of 600 events with root")
	fork.add(t, "fork", 100)
	refused("a longer fork", fork, "forked", ErrForked, 700, "does not extend the tree of 600 events stored in "+state)
	refused("an older copy", older, "rolled_back", ErrRolledBack, 300, "the log rolled back: the node's checkpoint has 300 events, the one stored in "+state+" has 600")
	other := newStore(t, otherKey, 5)
	dir := filepath.Join(t.TempDir(), "log")
	other.publish(t, dir)
	otherHost := serveDir(t, dir)
	rep, err = check(otherHost)
	if !errors.Is(err, ErrAnotherKey) || rep.Result != "another_key" || rep.Evidence == "" {
		t.Fatalf("another node: %+v %v", rep, err)
	}
	wants = append(wants, evidenceWant{"another_key", 5})
	requireEvidence(t, state, stored, wants...)

	// Damaged tiles: the host's tiles are not those of its own checkpoint.
	base.add(t, "more", 300)
	broken := filepath.Join(t.TempDir(), "log")
	base.publish(t, broken)
	err = filepath.WalkDir(filepath.Join(broken, "tile"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b[0] ^= 1
		return os.WriteFile(path, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := check(serveDir(t, broken)); !errors.Is(err, errBadTiles) || rep.Evidence != "" {
		t.Fatalf("check of damaged tiles: %+v %v, want errBadTiles without evidence", rep, err)
	}
	requireEvidence(t, state, stored, wants...)

	// A first run that pins the key refuses another node and stores nothing;
	// it trusts the right one. A pinned key other than the stored one is
	// refused before anything is read.
	pinned := CheckOptions{State: filepath.Join(t.TempDir(), "pinned.json"), VerifierKey: stored.VerifierKey}
	if rep, err := Check(ctx, TilesHost(otherHost), otherHost.Base(), pinned); !errors.Is(err, ErrAnotherKey) || rep.Result != "another_key" {
		t.Fatalf("pinned first check of another node: %+v %v", rep, err)
	}
	if _, err := os.Stat(pinned.State); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused pinned first check stored a state: %v", err)
	}
	if rep, err := Check(ctx, TilesHost(host), host.Base(), pinned); err != nil || rep.Result != "trusted" || rep.VerifierKey != stored.VerifierKey {
		t.Fatalf("pinned first check of the right node: %+v %v", rep, err)
	}
	wrong := CheckOptions{State: state, VerifierKey: other.l.VerifierKey()}
	if _, err := Check(ctx, TilesHost(host), host.Base(), wrong); err == nil || !strings.Contains(err.Error(), "not --verifier-key") {
		t.Fatalf("check with a verifier key other than the stored one: %v", err)
	}

	base.publish(t, pub)
	if rep, err := check(host); err != nil || rep.Result != "consistent" || rep.OldSize != 600 || rep.TreeSize != 900 {
		t.Fatalf("check of the original host after the refusals: %+v %v", rep, err)
	}
}
