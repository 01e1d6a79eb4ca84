package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/civnode/civnode/witness"
)

// The witness (serve --witness-for) given what anyone may send to its public
// add-checkpoint route: a log's own checkpoint of a size tlog loops on, the
// log's current checkpoint over and over, and an origin line of kilobytes.

// addCheckpointRequest is a C2SP add-checkpoint body.
func addCheckpointRequest(old int64, proof []tlog.Hash, signed []byte) []byte {
	body := fmt.Sprintf("old %d\n", old)
	for _, h := range proof {
		body += h.String() + "\n"
	}
	return []byte(body + "\n" + string(signed))
}

// witnessState is the part of GET /v1/witness these tests read.
type witnessState struct {
	VerifierKey string `json:"verifier_key"`
	Logs        []struct {
		Origin   string `json:"origin"`
		TreeSize int64  `json:"tree_size"`
	} `json:"logs"`
}

// TestWitnessRefusesHugeTreeSize: a log's own signed checkpoint of 2^62+5
// events with a one-hash proof from the size the witness holds is answered
// 400 at once, naming the size, and the witness goes on serving: another
// log's checkpoint is cosigned and GET /v1/witness answers, the first log
// still held where it was.
func TestWitnessRefusesHugeTreeSize(t *testing.T) {
	needBinary(t)
	a, b := newHostileLog(t), newHostileLog(t)
	w := startProcess(t, filepath.Join(t.TempDir(), "witness"), "--witness-for", a.vkey, "--witness-for", b.vkey)
	if status, _, answer := addCheckpoint(t, w.url, addCheckpointRequest(0, nil, a.checkpoint(t, 1, madeUpHash("a leaf")))); status != http.StatusOK {
		t.Fatalf("cosign a's size 1: %d %q", status, answer)
	}

	// httpClient gives up after 10 s: a witness spinning on the request
	// fails the test there.
	huge := addCheckpointRequest(1, []tlog.Hash{madeUpHash("a proof hash")}, a.checkpoint(t, 1<<62+5, madeUpHash("a root")))
	status, ctype, answer := addCheckpoint(t, w.url, huge)
	if status != http.StatusBadRequest || !strings.HasPrefix(ctype, "text/plain") || !strings.Contains(answer, "tree size out of range") {
		t.Fatalf("a's checkpoint of 2^62+5: %d %s %q, want 400 naming the tree size", status, ctype, answer)
	}

	if status, _, answer := addCheckpoint(t, w.url, addCheckpointRequest(0, nil, b.checkpoint(t, 3, madeUpHash("b's root")))); status != http.StatusOK {
		t.Fatalf("cosign b's size 3 after the refusal: %d %q", status, answer)
	}
	var st witnessState
	getJSON(t, w.url+"/v1/witness", w.token, http.StatusOK, &st)
	got := map[string]int64{}
	for _, l := range st.Logs {
		got[l.Origin] = l.TreeSize
	}
	if got[a.origin] != 1 || got[b.origin] != 3 {
		t.Fatalf("GET /v1/witness holds %v, want a at 1 and b at 3", got)
	}
}

// TestWitnessReplayRecordsNothing: the checkpoint the witness holds, sent
// again from its size, is answered with a cosignature that verifies, but
// neither replaces witness.json nor appends a witness.cosigned audit entry;
// an add-checkpoint for a log it does not witness, with an origin line of
// 8 KiB, is answered 404 with the origin cut as every error text is.
func TestWitnessReplayRecordsNothing(t *testing.T) {
	needBinary(t)
	a := newHostileLog(t)
	dir := filepath.Join(t.TempDir(), "witness")
	w := startProcess(t, dir, "--witness-for", a.vkey)
	signed := a.checkpoint(t, 1, madeUpHash("a leaf"))
	if status, _, answer := addCheckpoint(t, w.url, addCheckpointRequest(0, nil, signed)); status != http.StatusOK {
		t.Fatalf("cosign a's size 1: %d %q", status, answer)
	}
	statePath := filepath.Join(dir, "witness.json")
	written, err := os.Stat(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var st witnessState
	getJSON(t, w.url+"/v1/witness", w.token, http.StatusOK, &st)
	cosigVerifier, err := witness.NewCosignatureVerifier(st.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	logVerifier, err := note.NewVerifier(a.vkey)
	if err != nil {
		t.Fatal(err)
	}

	for i := range 5 {
		status, _, line := addCheckpoint(t, w.url, addCheckpointRequest(1, nil, signed))
		if status != http.StatusOK {
			t.Fatalf("replay %d: %d %q", i, status, line)
		}
		n, err := note.Open(append(append([]byte{}, signed...), line...), note.VerifierList(logVerifier, cosigVerifier))
		if err != nil || len(n.Sigs) != 2 {
			t.Fatalf("replay %d: the cosignature %q does not verify: %v", i, line, err)
		}
	}
	now, err := os.Stat(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(written, now) || !now.ModTime().Equal(written.ModTime()) {
		t.Error("a replay replaced witness.json")
	}
	var audit struct {
		Entries []struct {
			Actor string `json:"actor"`
		} `json:"entries"`
	}
	getJSON(t, w.url+"/v1/audit?action=witness.cosigned", w.token, http.StatusOK, &audit)
	if len(audit.Entries) != 1 || audit.Entries[0].Actor != a.origin {
		t.Errorf("witness.cosigned entries after a cosignature and 5 replays: %+v, want the first alone", audit.Entries)
	}

	origin := "civnode/" + strings.Repeat("x", 8<<10)
	status, _, answer := addCheckpoint(t, w.url, []byte("old 0\n\n"+origin+"\n1\n"+madeUpHash("r").String()+"\n\n— x AAAA\n"))
	if status != http.StatusNotFound || len(answer) > 512 || !strings.Contains(answer, "…") {
		t.Errorf("an unknown origin of 8 KiB: %d, %d bytes %.300q, want 404 with the origin cut", status, len(answer), answer)
	}
}
