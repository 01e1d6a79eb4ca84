package witness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tdnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/civnode/civnode/witness/witnesstest"
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
// with the node's verifier (NewCosignatureVerifier) and with
// transparency-dev/formats' own, which the omniwitness uses.
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

// The pinned vector: the cosignature/v1 line of a fixed key over a fixed
// checkpoint at a fixed time, in C2SP tlog-cosignature's bytes.
const (
	vectorCosigner   = "example.com/witness"
	vectorVKey       = "example.com/witness+c3dc91a8+BOpKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIs"
	vectorCheckpoint = "example.com/log\n4\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
	vectorTime       = 1764331200
	vectorLine       = "— example.com/witness w9yRqAAAAABpKY7AcGSDZ9HqhM0zrlvIcZ/1CtA8D4BDNYxVbXC2h3ONxZor3TJ1ogb87m313klfZT70aX318ycxE482bhk6gU3GCQ==\n"
)

// TestCosignaturesAreTheSpecsBytes holds transparency-dev/formats, which
// makes and checks the witness's cosignatures, to the spec's bytes as
// witnesstest writes them apart from it: those are the pinned vector and
// verify with NewCosignatureVerifier, and what the witness's signer makes at
// a second is, byte for byte, the spec's bytes at that second.
func TestCosignaturesAreTheSpecsBytes(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make32(7))
	if got := CosignatureVerifierKey(vectorCosigner, key.Public().(ed25519.PublicKey)); got != vectorVKey {
		t.Fatalf("verifier key %s, want %s", got, vectorVKey)
	}
	spec := witnesstest.NewDatedCosigner(vectorCosigner, key, func() time.Time { return time.Unix(vectorTime, 0) })
	signed, err := note.Sign(&note.Note{Text: vectorCheckpoint}, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := vectorCheckpoint + "\n" + vectorLine; string(signed) != want {
		t.Fatalf("the spec's bytes:\n%q\nwant the vector\n%q", signed, want)
	}
	v, err := NewCosignatureVerifier(vectorVKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	if ts, err := CosignatureTime(n.Sigs[0]); err != nil || !ts.Equal(time.Unix(vectorTime, 0)) {
		t.Errorf("cosignature time %v, %v; want %d", ts, err, vectorTime)
	}
	tampered := strings.Replace(string(signed), "\n4\n", "\n5\n", 1)
	if _, err := note.Open([]byte(tampered), note.VerifierList(v)); err == nil {
		t.Fatal("a tampered note verified")
	}

	ours, err := NewCosignatureSigner(vectorCosigner, key)
	if err != nil {
		t.Fatal(err)
	}
	if ours.Name() != spec.Name() || ours.KeyHash() != spec.KeyHash() || ours.VerifierKey() != vectorVKey {
		t.Fatalf("signer %s %08x %s, want %s %08x %s", ours.Name(), ours.KeyHash(), ours.VerifierKey(), spec.Name(), spec.KeyHash(), vectorVKey)
	}
	made, err := ours.Sign([]byte(vectorCheckpoint))
	if err != nil {
		t.Fatal(err)
	}
	if len(made) < 8 {
		t.Fatalf("signature of %d bytes", len(made))
	}
	at := time.Unix(int64(binary.BigEndian.Uint64(made)), 0)
	if d := time.Since(at); d < -time.Minute || d > time.Minute {
		t.Errorf("the signer dated its cosignature %v", at)
	}
	want, _ := witnesstest.NewDatedCosigner(vectorCosigner, key, func() time.Time { return at }).Sign([]byte(vectorCheckpoint))
	if !bytes.Equal(made, want) {
		t.Errorf("the signer's bytes\n%x\nthe spec's at the same second\n%x", made, want)
	}
}

// TestCosignatureVerifierRefusals: a witness is named by its Ed25519
// cosignature/v1 key only. formats takes the other keys below as a
// cosigner's, so NewCosignatureVerifier refuses them itself.
func TestCosignatureVerifierRefusals(t *testing.T) {
	key := ed25519.NewKeyFromSeed(make32(7))
	noteKey, err := note.NewEd25519VerifierKey(vectorCosigner, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	_, mldsaKey, err := tdnote.GenerateMLDSAKey(vectorCosigner)
	if err != nil {
		t.Fatal(err)
	}
	for name, vkey := range map[string]string{
		"a note key (type 0x01)":   noteKey,
		"an ML-DSA key":            mldsaKey,
		"a key hash not the key's": strings.Replace(vectorVKey, "+c3dc91a8+", "+c3dc91a9+", 1),
		"another name":             strings.Replace(vectorVKey, "example.com/witness+", "example.com/other+", 1),
		"no key":                   "example.com/witness+c3dc91a8+",
		"not a key":                "example.com/witness",
	} {
		if _, err := NewCosignatureVerifier(vkey); err == nil {
			t.Errorf("%s: %s was taken", name, vkey)
		}
	}
}
