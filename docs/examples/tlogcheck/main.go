// Command tlogcheck checks the output of civnode transparency prove with
// golang.org/x/mod/sumdb/tlog and the standard library alone: the checkpoint
// is an Ed25519 signed note by the verifier key, its body names the tree
// (origin, size, root), and the event id's leaf is in that tree. Give the
// verifier key you trust as the argument; without one, the key in the input
// is used, which proves only that the node agrees with itself.
//
//	civnode transparency prove 7 > proof.json
//	go run ./docs/examples/tlogcheck "$VKEY" < proof.json
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	var p struct {
		Checkpoint string           `json:"checkpoint"`
		Key        string           `json:"verifier_key"`
		ID         string           `json:"event_id"`
		Index      int64            `json:"leaf_index"`
		Proof      tlog.RecordProof `json:"proof"`
	}
	check(json.NewDecoder(os.Stdin).Decode(&p) == nil, "the input is not a proof")
	vkey := append(os.Args[1:], p.Key)[0] // the key you trust, else the proof's own
	// A key is <name>+<hash>+base64(0x01 ‖ key); a note is its text, a blank line, "— <name> base64(hash ‖ signature)".
	k := strings.SplitN(vkey, "+", 3)
	key, _ := base64.StdEncoding.DecodeString(k[len(k)-1])
	text, sigLine, _ := strings.Cut(p.Checkpoint, "\n\n")
	sig, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(sigLine[strings.LastIndex(sigLine, " ")+1:]))
	check(len(k) == 3 && len(key) == 33 && len(sig) == 68 && ed25519.Verify(key[1:], []byte(text+"\n"), sig[4:]), "the checkpoint is not signed by "+vkey)
	origin, size, root64 := "", int64(0), ""
	fmt.Sscan(text, &origin, &size, &root64) // the checkpoint's body: origin, tree size, root, one per line
	root, err := tlog.ParseHash(root64)
	id, _ := hex.DecodeString(p.ID)
	check(err == nil && origin == k[0] && len(id) == 32, "the checkpoint is not a tree of "+k[0])
	check(tlog.CheckRecord(p.Proof, size, root, p.Index, tlog.RecordHash(id)) == nil, "the event is not in the tree")
	fmt.Printf("ok: event %s is leaf %d of the tree of %d events, root %s, signed by %s\n", p.ID, p.Index, size, root, origin)
}

func check(ok bool, why string) {
	if !ok {
		log.Fatal(why)
	}
}
