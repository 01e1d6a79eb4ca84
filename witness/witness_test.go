package witness

import (
	"crypto/ed25519"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tdnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func newTestWitness(t *testing.T, path string, logs ...string) *Witness {
	t.Helper()
	key, err := DeriveKey(ed25519.NewKeyFromSeed(make32(9)))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(Options{Key: key, Name: "civnode-witness/test", Logs: logs, StatePath: path})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWitnessRules runs the C2SP tlog-witness rules as a table, in order, on
// one witness of one log; "restart" reopens the witness from its state file
// between two submissions.
func TestWitnessRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.json")
	lg := newMemLog(t, 1)
	other := newMemLog(t, 2) // another key, another origin
	w := newTestWitness(t, path, lg.vkey)

	// A log whose key claims lg's origin but is another key.
	impostorKey := ed25519.NewKeyFromSeed(make32(3))
	skey, _ := signerKey(t, lg.origin, impostorKey)
	impostor, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}

	lg.append(t, "a", 5)
	req5 := lg.request(t, 0)
	lg.append(t, "a", 3)
	req8from5 := lg.request(t, 5)
	// A fork: same key, the same first 3 leaves, then others.
	fork := newMemLog(t, 1)
	fork.append(t, "a", 3)
	fork.append(t, "b", 5)
	forkFrom5 := fork.request(t, 5)
	fork5 := newMemLog(t, 1)
	fork5.append(t, "c", 5)

	for _, tc := range []struct {
		name    string
		body    func() []byte
		restart bool
		status  int   // 0: cosigned
		size    int64 // for 409
	}{
		{name: "new log, old 0", body: func() []byte { return req5 }},
		{name: "same checkpoint again", body: func() []byte { return []byte(strings.Replace(string(req5), "old 0", "old 5", 1)) }},
		{name: "old size mismatch", body: func() []byte { return lg.request(t, 0) }, status: http.StatusConflict, size: 5},
		{name: "unknown log", body: func() []byte { other.append(t, "x", 1); return other.request(t, 0) }, status: http.StatusNotFound},
		{name: "wrong key", body: func() []byte {
			head, _, _ := lg.TreeCheckpoint()
			_ = head
			_, signed, _ := lg.TreeCheckpoint()
			n, _ := note.Open(signed, note.VerifierList(mustVerifier(t, lg.vkey)))
			bad, _ := note.Sign(&note.Note{Text: n.Text}, impostor)
			return []byte("old 5\n" + proofLines(t, lg, 5, 8) + "\n" + string(bad))
		}, status: http.StatusForbidden},
		{name: "bad proof", body: func() []byte {
			return []byte(strings.Replace(string(req8from5), "old 5\n", "old 5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", 1))
		}, status: http.StatusUnprocessableEntity},
		{name: "inconsistent tree (a fork of the cosigned one)", body: func() []byte { return forkFrom5 }, status: http.StatusUnprocessableEntity},
		{name: "same size, different root", body: func() []byte {
			return []byte(strings.Replace(string(fork5.request(t, 0)), "old 0", "old 5", 1))
		}, status: http.StatusConflict, size: 5},
		{name: "restart, then grow", body: func() []byte { return req8from5 }, restart: true},
		{name: "smaller tree than held", body: func() []byte { return []byte(strings.Replace(string(req5), "old 0", "old 8", 1)) }, status: http.StatusBadRequest},
		{name: "smaller tree from an older size", body: func() []byte { return []byte(strings.Replace(string(req5), "old 0", "old 3", 1)) }, status: http.StatusConflict, size: 8},
		{name: "malformed body", body: func() []byte { return []byte("old x\n\n") }, status: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.restart {
				w = newTestWitness(t, path, lg.vkey)
			}
			got, err := w.AddCheckpoint(tc.body())
			if tc.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				checkCosignature(t, w, lg, got)
				return
			}
			var re *RequestError
			if !errors.As(err, &re) || re.Status != tc.status {
				t.Fatalf("got %v, want status %d", err, tc.status)
			}
			if tc.status == http.StatusConflict && re.Size != tc.size {
				t.Errorf("409 names size %d, want %d", re.Size, tc.size)
			}
		})
	}
	if l := w.Logs(); len(l) != 1 || l[0].State == nil || l[0].State.TreeSize != 8 {
		t.Errorf("logs %+v, want %s at 8", l, lg.origin)
	}
}

func mustVerifier(t *testing.T, vkey string) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func proofLines(t *testing.T, l *memLog, from, to int64) string {
	t.Helper()
	p, err := l.ProveConsistency(from, to)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, h := range p {
		s += b64(h) + "\n"
	}
	return s
}

// checkCosignature opens the log's checkpoint with the cosignature appended,
// with our verifier and with transparency-dev's (formats v0.1.1, which the
// omniwitness uses).
func checkCosignature(t *testing.T, w *Witness, l *memLog, c Cosigned) {
	t.Helper()
	_, signed, err := l.TreeCheckpointAt(c.TreeSize)
	if err != nil {
		t.Fatal(err)
	}
	cosigned := append(append([]byte{}, signed...), c.Line...)
	ours, err := NewCosignatureVerifier(w.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := tdnote.NewVerifierForCosignatureV1(w.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]note.Verifier{"ours": ours, "transparency-dev/formats": theirs} {
		n, err := note.Open(cosigned, note.VerifierList(v, mustVerifier(t, l.vkey)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(n.Sigs) != 2 {
			t.Fatalf("%s verified %d signatures, want the log's and the witness's", name, len(n.Sigs))
		}
		for _, s := range n.Sigs {
			if s.Name == w.Name() {
				ts, err := CosignatureTime(s)
				if err != nil || time.Since(ts) > time.Minute {
					t.Errorf("cosignature time %v, %v", ts, err)
				}
			}
		}
	}
}

// TestTheirCosignaturesVerifyWithOurs signs with transparency-dev's
// cosignature/v1 signer and verifies with ours.
func TestTheirCosignaturesVerifyWithOurs(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make32(7))
	skey, _ := signerKey(t, "example.com/witness", key)
	theirs, err := tdnote.NewSignerForCosignatureV1(skey)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := NewCosignatureVerifier(CosignatureVerifierKey("example.com/witness", key.Public().(ed25519.PublicKey)))
	if err != nil {
		t.Fatal(err)
	}
	if ours.KeyHash() != theirs.KeyHash() {
		t.Fatalf("key hash %08x, theirs %08x", ours.KeyHash(), theirs.KeyHash())
	}
	signed, err := note.Sign(&note.Note{Text: "origin\n1\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"}, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(signed, note.VerifierList(ours)); err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(signed), "\n1\n", "\n2\n", 1)
	if _, err := note.Open([]byte(tampered), note.VerifierList(ours)); err == nil {
		t.Fatal("a tampered note verified")
	}
}
