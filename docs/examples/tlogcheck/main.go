// Command tlogcheck checks the output of civnode transparency prove with
// golang.org/x/mod/sumdb/tlog and the standard library alone: the checkpoint
// is an Ed25519 signed note by the verifier key, its body names the tree
// (origin, size, root), and the event id's leaf is in that tree. Give the
// verifier key you trust as the argument; without one, the key in the input
// is used, which proves only that the node agrees with itself. With -witness
// (repeatable), -quorum of those witnesses (default 1) must have cosigned
// the checkpoint (C2SP tlog-cosignature; prove --witnessed carries them).
//
//	civnode transparency prove 7 > proof.json
//	go run ./docs/examples/tlogcheck "$VKEY" < proof.json
//	civnode transparency prove 7 --witnessed | go run ./docs/examples/tlogcheck -witness "$WVKEY" "$VKEY"
package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	var witnesses []string
	flag.Func("witness", "a witness's cosignature/v1 verifier key (repeatable)", func(k string) error { witnesses = append(witnesses, k); return nil })
	quorum := flag.Int("quorum", 1, "how many of the -witness keys must have cosigned")
	flag.Parse()
	var p struct {
		Checkpoint string           `json:"checkpoint"`
		Key        string           `json:"verifier_key"`
		ID         string           `json:"event_id"`
		Index      int64            `json:"leaf_index"`
		Proof      tlog.RecordProof `json:"proof"`
	}
	check(json.NewDecoder(os.Stdin).Decode(&p) == nil, "the input is not a proof")
	vkey := append(flag.Args(), p.Key)[0] // the key you trust, else the proof's own
	// A key is <name>+<hash>+base64(0x01 ‖ key); a note is its text, a blank line, "— <name> base64(hash ‖ signature)" lines.
	k := strings.SplitN(vkey, "+", 3)
	key, _ := base64.StdEncoding.DecodeString(k[len(k)-1])
	text, sigLines, _ := strings.Cut(p.Checkpoint, "\n\n")
	sig := signature(sigLines, k[0])
	check(len(k) == 3 && len(key) == 33 && len(sig) == 68 && ed25519.Verify(key[1:], []byte(text+"\n"), sig[4:]), "the checkpoint is not signed by "+vkey)
	cosigned := cosignatures(sigLines, text, witnesses)
	check(len(witnesses) == 0 || cosigned >= *quorum, fmt.Sprintf("not witnessed: %d of %d cosignatures", cosigned, *quorum))
	origin, size, root64 := "", int64(0), ""
	_, err := fmt.Sscan(text, &origin, &size, &root64) // the checkpoint's body: origin, tree size, root, one per line
	check(err == nil, "the checkpoint's body is not origin, tree size and root")
	// tlog's proof checks loop for ever on sizes above 2^62; no log holds
	// more than 2^53-1 records, where check-inclusion.mjs stops too.
	check(size >= 0 && size <= 1<<53-1, fmt.Sprintf("the checkpoint's tree size %d is beyond 2^53-1", size))
	root, err := tlog.ParseHash(root64)
	id, _ := hex.DecodeString(p.ID)
	check(err == nil && origin == k[0] && len(id) == 32, "the checkpoint is not a tree of "+k[0])
	check(tlog.CheckRecord(p.Proof, size, root, p.Index, tlog.RecordHash(id)) == nil, "the event is not in the tree")
	fmt.Printf("ok: event %s is leaf %d of the tree of %d events, root %s, signed by %s", p.ID, p.Index, size, root, origin)
	if len(witnesses) > 0 {
		fmt.Printf(", cosigned by %d of %d witnesses", cosigned, len(witnesses))
	}
	fmt.Println()
}

// cosignatures counts the witnesses (cosignature/v1 verifier keys,
// <name>+<hash>+base64(0x04 ‖ key)) whose line among the note's signature
// lines verifies: base64(hash ‖ time t ‖ signature), the signature over
// "cosignature/v1\ntime <t>\n" and the note's text.
func cosignatures(sigLines, text string, witnesses []string) int {
	n := 0
	for _, w := range witnesses {
		wk := strings.SplitN(w, "+", 3)
		wkey, _ := base64.StdEncoding.DecodeString(wk[len(wk)-1])
		check(len(wk) == 3 && len(wkey) == 33 && wkey[0] == 0x04, "the witness key "+w+" is not a cosignature/v1 key")
		h := sha256.Sum256([]byte(wk[0] + "\n" + string(wkey)))
		cs := signature(sigLines, wk[0])
		if wk[1] == hex.EncodeToString(h[:4]) && len(cs) == 76 && string(cs[:4]) == string(h[:4]) &&
			ed25519.Verify(wkey[1:], fmt.Appendf(nil, "cosignature/v1\ntime %d\n%s\n", binary.BigEndian.Uint64(cs[4:12]), text), cs[12:]) {
			n++
		}
	}
	return n
}

// signature is the decoded signature of the first line of the note's
// signature lines that is name's.
func signature(lines, name string) []byte {
	for _, l := range strings.Split(lines, "\n") {
		if rest, ok := strings.CutPrefix(l, "— "+name+" "); ok {
			b, _ := base64.StdEncoding.DecodeString(rest)
			return b
		}
	}
	return nil
}

func check(ok bool, why string) {
	if !ok {
		log.Fatal(why)
	}
}
