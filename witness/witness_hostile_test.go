package witness

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/eventlog"
)

// addCheckpointWithin runs w.AddCheckpoint(body) and fails t if it has not
// returned within a generous bound: a witness that spins on a request holds
// its lock, and every other log's request with it.
func addCheckpointWithin(t *testing.T, w *Witness, body []byte) (Cosigned, error) {
	t.Helper()
	type result struct {
		c   Cosigned
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := w.AddCheckpoint(body)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-time.After(30 * time.Second):
		t.Fatal("add-checkpoint has not returned within 30 s: the witness spins on the request")
		return Cosigned{}, nil
	}
}

// TestHugeTreeSizeRefusedAtOnce: a log's own signed checkpoint of a size
// above 2^62 with a one-hash proof from the size the witness holds would send
// tlog's proof check into an endless loop under the witness's lock. The
// witness refuses it with 400 at once, holds the log where it was, and still
// cosigns another log's checkpoint afterwards.
func TestHugeTreeSizeRefusedAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.json")
	lg := newMemLog(t, 1)
	other := newMemLog(t, 2)
	w := newTestWitness(t, path, lg.vkey, other.vkey)

	lg.append(t, "a", 1)
	if _, err := addCheckpointWithin(t, w, lg.request(t, 0)); err != nil {
		t.Fatalf("cosign size 1: %v", err)
	}
	huge := func(size int64) []byte {
		root := sha256.Sum256([]byte("a root"))
		signed, err := note.Sign(&note.Note{Text: eventlog.CheckpointText(lg.origin, eventlog.TreeHead{Size: size, Root: root})}, lg.signer)
		if err != nil {
			t.Fatal(err)
		}
		hash := sha256.Sum256([]byte("a proof hash"))
		return []byte("old 1\n" + b64(hash) + "\n\n" + string(signed))
	}
	for name, body := range map[string][]byte{
		"size 2^62+5":         huge(1<<62 + 5),
		"size 2^63-1":         huge(1<<63 - 1),
		"size MaxTreeSize+1":  huge(eventlog.MaxTreeSize + 1),
		"old 2^63-1":          []byte(strings.Replace(string(huge(5)), "old 1\n", "old 9223372036854775807\n", 1)),
		"old MaxTreeSize + 1": []byte(strings.Replace(string(huge(5)), "old 1\n", "old 9007199254740992\n", 1)),
	} {
		_, err := addCheckpointWithin(t, w, body)
		var re *RequestError
		if !errors.As(err, &re) || re.Status != http.StatusBadRequest {
			t.Errorf("%s: got %v, want a 400 refusal", name, err)
		}
	}
	if _, err := addCheckpointWithin(t, w, huge(eventlog.MaxTreeSize)); err == nil {
		t.Error("a proof of a made-up hash to a tree of MaxTreeSize verified")
	}

	other.append(t, "x", 3)
	got, err := addCheckpointWithin(t, w, other.request(t, 0))
	if err != nil {
		t.Fatalf("another log's checkpoint after the refusals: %v", err)
	}
	checkCosignature(t, w, other, got)
	for _, l := range w.Logs() {
		if l.State == nil {
			t.Fatalf("%s: no state", l.Origin)
		}
		if want := map[string]int64{lg.origin: 1, other.origin: 3}[l.Origin]; l.State.TreeSize != want {
			t.Errorf("%s held at %d, want %d", l.Origin, l.State.TreeSize, want)
		}
	}
}

// TestReplayWritesNothing: the checkpoint the witness holds, sent again from
// its own size, is cosigned again (C2SP lets a witness re-sign) but the state
// file is not replaced, restart or not; a larger tree is written as before.
func TestReplayWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.json")
	lg := newMemLog(t, 1)
	w := newTestWitness(t, path, lg.vkey)

	lg.append(t, "a", 5)
	first, err := w.AddCheckpoint(lg.request(t, 0))
	if err != nil || first.Again {
		t.Fatalf("the first cosignature: %+v, %v", first, err)
	}
	written, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	replay := []byte(strings.Replace(string(lg.request(t, 0)), "old 0\n", "old 5\n", 1))
	for i, restart := range []bool{false, false, true} {
		if restart {
			w = newTestWitness(t, path, lg.vkey)
		}
		got, err := w.AddCheckpoint(replay)
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		if !got.Again || got.TreeSize != 5 {
			t.Errorf("replay %d: %+v, want Again at size 5", i, got)
		}
		checkCosignature(t, w, lg, got)
		now, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(written, now) || !now.ModTime().Equal(written.ModTime()) {
			t.Fatalf("replay %d replaced the state file", i)
		}
	}

	lg.append(t, "a", 2)
	grown, err := w.AddCheckpoint(lg.request(t, 5))
	if err != nil || grown.Again || grown.TreeSize != 7 {
		t.Fatalf("the grown tree: %+v, %v", grown, err)
	}
	if now, err := os.Stat(path); err != nil || os.SameFile(written, now) {
		t.Fatalf("the grown tree's cosignature did not replace the state file (%v)", err)
	}
	if l := w.Logs(); len(l) != 1 || l[0].State == nil || l[0].State.TreeSize != 7 {
		t.Errorf("logs %+v, want %s at 7", l, lg.origin)
	}
}
