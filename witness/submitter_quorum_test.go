package witness

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// twoWitnesses serves witnesses of lg, one for each seed, and returns their
// remotes.
func twoWitnesses(t *testing.T, dir string, lg *memLog, seeds ...byte) []Remote {
	t.Helper()
	if len(seeds) == 0 {
		seeds = []byte{7, 8}
	}
	var remotes []Remote
	for i, seed := range seeds {
		wkey, _ := DeriveKey(ed25519Key(make32(seed)))
		w, err := New(Options{Key: wkey, Name: "w" + string(rune('0'+seed)) + ".example/witness", Logs: []string{lg.vkey},
			StatePath: filepath.Join(dir, "w"+string(rune('1'+i))+".json")})
		if err != nil {
			t.Fatal(err)
		}
		r, err := ParseRemote(w.VerifierKey() + "@" + serveWitness(t, w).URL)
		if err != nil {
			t.Fatal(err)
		}
		remotes = append(remotes, r)
	}
	return remotes
}

// runUntil runs sub until cond holds (or fails the test after 10 s).
func runUntil(t *testing.T, sub *Submitter, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not reached; statuses %+v", sub.Statuses())
		}
	}
}

// A stored witnessed checkpoint is served as witnessed only with a quorum of
// the witnesses configured now: a quorum raised, or a cosigner dropped from
// the configuration, applies at the next start, before the log grows.
func TestChangedQuorumAppliesAtOnce(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 5)
	remotes := twoWitnesses(t, dir, lg)
	state := filepath.Join(dir, "cosignatures.json")
	sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 1, StatePath: state, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, sub, func() bool { w := sub.Witnessed(); return w != nil && len(w.Cosigners) == 2 })
	full := sub.Witnessed()

	same, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes, Quorum: 2, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	if w := same.Witnessed(); w == nil || w.Checkpoint != full.Checkpoint {
		t.Errorf("quorum 2 of the 2 cosigners: %+v, want %+v", w, full)
	}
	alone, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes[:1], Quorum: 1, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	if w := alone.Witnessed(); w == nil || len(w.Cosigners) != 1 || w.Cosigners[0] != remotes[0].Name() {
		t.Errorf("one witness configured: %+v, want its cosignature alone", w)
	}
	other, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes[1:], Quorum: 1, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	if w := other.Witnessed(); w == nil || len(w.Cosigners) != 1 || w.Cosigners[0] != remotes[1].Name() {
		t.Errorf("the other witness configured: %+v", w)
	}

	// A cosignature of a witness now configured does not count for one that
	// is not: with only one of them, a quorum of 2 is not met.
	third := twoWitnesses(t, t.TempDir(), lg, 9)[0]
	raised, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: []Remote{remotes[0], third}, Quorum: 2, StatePath: state})
	if err != nil {
		t.Fatal(err)
	}
	if w := raised.Witnessed(); w != nil {
		t.Errorf("a quorum of 2 with one stored cosigner: served as witnessed %+v", w)
	}
}

// Ceiling holds the submissions to the published part of the tree, and a
// witness holding a larger tree than the node's is told to OnAhead.
func TestSubmitterCeilingAndAhead(t *testing.T) {
	dir := t.TempDir()
	lg := newMemLog(t, 1)
	lg.append(t, "a", 9)
	size := lg.TreeSize()
	remotes := twoWitnesses(t, dir, lg)
	ceiling := int64(4)
	sub, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes[:1], Quorum: 1, StatePath: filepath.Join(dir, "c.json"),
		Interval: 10 * time.Millisecond, Ceiling: func() int64 { return ceiling }})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, sub, func() bool { w := sub.Witnessed(); return w != nil })
	if w := sub.Witnessed(); w.TreeSize != 4 {
		t.Fatalf("with a ceiling of 4 the witnessed tree is %d", w.TreeSize)
	}

	// The witness now holds the whole tree (another submitter of the same
	// log); a node with an older copy of it hears that it is behind.
	full, err := NewSubmitter(SubmitterOptions{Log: lg, Witnesses: remotes[:1], Quorum: 1, StatePath: filepath.Join(dir, "full.json"), Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, full, func() bool { w := full.Witnessed(); return w != nil && w.TreeSize == size })
	old := newMemLog(t, 1)
	old.append(t, "a", 5)
	ahead := make(chan int64, 4)
	behind, err := NewSubmitter(SubmitterOptions{Log: old, Witnesses: remotes[:1], Quorum: 1, StatePath: filepath.Join(dir, "old.json"),
		Interval: 10 * time.Millisecond, OnAhead: func(name string, size int64) {
			if name == remotes[0].Name() {
				ahead <- size
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	runUntil(t, behind, func() bool {
		select {
		case got = <-ahead:
			return true
		default:
			return false
		}
	})
	if got != size {
		t.Errorf("OnAhead said %d, want %d", got, size)
	}
}
