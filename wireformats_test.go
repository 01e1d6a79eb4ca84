package civnode_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/commands"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/ethereum/go-ethereum/crypto"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// wireFormatsDoc is the wire format reference whose examples
// TestWireFormatExamples recomputes.
const wireFormatsDoc = "docs/wire-formats.md"

// docBlocks returns the fenced code blocks of the markdown file at path that
// carry a name after their language (```json event-2), by name. Each block's
// text ends with a newline, as its last line does in the file.
func docBlocks(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := make(map[string]string)
	var (
		name string
		body strings.Builder
		open bool
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case !open && strings.HasPrefix(text, "```"):
			open, name = true, ""
			body.Reset()
			if info := strings.Fields(strings.TrimPrefix(text, "```")); len(info) >= 2 {
				name = info[1]
				if _, dup := blocks[name]; dup {
					t.Fatalf("%s:%d: a second block named %q", path, line, name)
				}
			}
		case open && text == "```":
			open = false
			if name != "" {
				blocks[name] = body.String()
			}
		case open:
			body.WriteString(text)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if open {
		t.Fatalf("%s: a code block is not closed", path)
	}
	return blocks
}

// block returns the named block, failing the test when the page lacks it.
func block(t *testing.T, blocks map[string]string, name string) string {
	t.Helper()
	b, ok := blocks[name]
	if !ok {
		t.Fatalf("%s has no block named %q", wireFormatsDoc, name)
	}
	return b
}

// oneLine returns a one-line block without its newline.
func oneLine(t *testing.T, blocks map[string]string, name string) string {
	t.Helper()
	b := strings.TrimSuffix(block(t, blocks, name), "\n")
	if strings.Contains(b, "\n") {
		t.Fatalf("block %q has more than one line", name)
	}
	return b
}

// docKey is the Ed25519 key of the page's examples, from its seed block.
func docKey(t *testing.T, blocks map[string]string) ed25519.PrivateKey {
	t.Helper()
	seed, err := hex.DecodeString(oneLine(t, blocks, "seed"))
	if err != nil || len(seed) != ed25519.SeedSize {
		t.Fatalf("seed block: %d bytes, %v", len(seed), err)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// TestWireFormatExamples recomputes every example of docs/wire-formats.md
// with the node's code, so the page and the formats cannot drift apart.
func TestWireFormatExamples(t *testing.T) {
	blocks := docBlocks(t, wireFormatsDoc)
	key := docKey(t, blocks)
	pub := key.Public().(ed25519.PublicKey)
	did := eventlog.DIDKey(pub)

	t.Run("node DID", func(t *testing.T) {
		lines := strings.Split(strings.TrimSuffix(block(t, blocks, "node-did"), "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("node-did block: %d lines, want the key and the DID", len(lines))
		}
		if got := base64.StdEncoding.EncodeToString(pub); lines[0] != got {
			t.Errorf("public key %s, the seed gives %s", lines[0], got)
		}
		if lines[1] != did {
			t.Errorf("DID %s, the key gives %s", lines[1], did)
		}
		back, err := eventlog.PublicKeyFromDID(lines[1])
		if err != nil || !back.Equal(pub) {
			t.Errorf("PublicKeyFromDID(%s) = %x, %v", lines[1], back, err)
		}
	})

	// The chain of the examples, appended by the log itself with the page's
	// key and a clock that stalls at the genesis timestamp.
	served := []string{oneLine(t, blocks, "event-1"), oneLine(t, blocks, "event-2"), oneLine(t, blocks, "event-3")}
	var genesis struct {
		Timestamp string `json:"timestamp"`
	}
	if err := json.Unmarshal([]byte(served[0]), &genesis); err != nil {
		t.Fatal(err)
	}
	start, err := time.Parse(eventlog.TimeLayout, genesis.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Open(eventlog.Options{InMemory: true, Key: key, Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for _, s := range served[1:] {
		var ev struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(context.Background(), eventlog.Draft{Type: ev.Type, Payload: ev.Payload}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("events", func(t *testing.T) {
		prev := strings.Repeat("0", 64)
		for i, s := range served {
			seq := uint64(i + 1)
			ev, err := l.Event(seq)
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Raw()) != s {
				t.Errorf("event %d as served:\n got %s\ndoc %s", seq, ev.Raw(), s)
			}
			// U from the values: the event without id and signature, encoded
			// by encoding/json (which escapes <, > and & and orders members
			// its own way), then canonicalised.
			var members map[string]any
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			if err := dec.Decode(&members); err != nil {
				t.Fatal(err)
			}
			id, _ := members["id"].(string)
			sig, _ := members["signature"].(string)
			if members["prev_hash"] != prev {
				t.Errorf("event %d: prev_hash %v, want %s", seq, members["prev_hash"], prev)
			}
			if members["node_did"] != did {
				t.Errorf("event %d: node_did %v, want %s", seq, members["node_did"], did)
			}
			delete(members, "id")
			delete(members, "signature")
			reencoded, err := json.Marshal(members)
			if err != nil {
				t.Fatal(err)
			}
			u, err := eventlog.CanonicalObject(reencoded)
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(u); hex.EncodeToString(sum[:]) != id {
				t.Errorf("event %d: id %s, SHA-256 of its signed bytes is %x", seq, id, sum)
			}
			if want := base64.StdEncoding.EncodeToString(ed25519.Sign(key, u)); sig != want {
				t.Errorf("event %d: signature %s, want %s", seq, sig, want)
			}
			if i == 1 {
				if doc := oneLine(t, blocks, "event-2-signed-bytes"); string(u) != doc {
					t.Errorf("event 2 signed bytes:\n got %s\ndoc %s", u, doc)
				}
			}
			prev = id
		}
		var gen struct {
			Payload struct {
				NodeDID   string `json:"node_did"`
				PublicKey string `json:"public_key"`
			} `json:"payload"`
		}
		json.Unmarshal([]byte(served[0]), &gen)
		if gen.Payload.NodeDID != did || gen.Payload.PublicKey != base64.StdEncoding.EncodeToString(pub) {
			t.Errorf("genesis payload names %s %s, want the page's key", gen.Payload.NodeDID, gen.Payload.PublicKey)
		}
	})

	t.Run("bundle seal", func(t *testing.T) {
		seal := oneLine(t, blocks, "bundle-seal")
		var s struct {
			Root string `json:"chain_root_hash"`
			Tip  string `json:"chain_tip_hash"`
			Gen  string `json:"generated_at"`
		}
		if err := json.Unmarshal([]byte(seal), &s); err != nil {
			t.Fatal(err)
		}
		canon, err := eventlog.CanonicalObject([]byte(seal))
		if err != nil || string(canon) != seal {
			t.Errorf("the seal block is not canonical JSON: %s, %v", canon, err)
		}
		gen, err := time.Parse(eventlog.TimeLayout, s.Gen)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		sum, err := l.WriteBundle(context.Background(), &buf, eventlog.BundleHeader{ExportID: "doc", GeneratedAt: gen}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.RootHash != s.Root || sum.TipHash != s.Tip {
			t.Errorf("bundle root %s tip %s, the seal names %s %s", sum.RootHash, sum.TipHash, s.Root, s.Tip)
		}
		var bundle struct {
			Signature  string `json:"bundle_signature"`
			Checkpoint string `json:"checkpoint"`
		}
		if err := json.Unmarshal(buf.Bytes(), &bundle); err != nil {
			t.Fatal(err)
		}
		if doc := oneLine(t, blocks, "bundle-signature"); bundle.Signature != doc {
			t.Errorf("bundle_signature %s, doc %s", bundle.Signature, doc)
		}
		if sig, _ := base64.StdEncoding.DecodeString(bundle.Signature); !ed25519.Verify(pub, []byte(seal), sig) {
			t.Error("bundle_signature does not verify over the seal block's bytes")
		}
		if bundle.Checkpoint != block(t, blocks, "checkpoint") {
			t.Errorf("the bundle's checkpoint:\n%s\ndoc:\n%s", bundle.Checkpoint, block(t, blocks, "checkpoint"))
		}
		if _, err := eventlog.VerifyBundle(context.Background(), &buf, nil); err != nil {
			t.Errorf("VerifyBundle: %v", err)
		}
	})

	t.Run("tree, checkpoint and tiles", func(t *testing.T) {
		var leaves []byte
		for i, h := range strings.Fields(block(t, blocks, "leaf-hashes")) {
			got, err := l.LeafHash(uint64(i + 1))
			if err != nil {
				t.Fatal(err)
			}
			var ev struct {
				ID string `json:"id"`
			}
			json.Unmarshal([]byte(served[i]), &ev)
			data, _ := hex.DecodeString(ev.ID)
			if want := sha256.Sum256(append([]byte{0}, data...)); got != tlog.Hash(want) {
				t.Errorf("leaf %d: the log's hash %x is not SHA-256(0x00 ‖ id) %x", i, got[:], want)
			}
			if hex.EncodeToString(got[:]) != h {
				t.Errorf("leaf %d: hash %x, doc %s", i, got[:], h)
			}
			leaves = append(leaves, got[:]...)
		}
		head, signed, err := l.TreeCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		if doc := block(t, blocks, "checkpoint"); string(signed) != doc {
			t.Errorf("checkpoint:\n%s\ndoc:\n%s", signed, doc)
		}
		if got, err := eventlog.OpenCheckpoint(signed, did, pub); err != nil || got != head {
			t.Errorf("OpenCheckpoint = %+v, %v; want %+v", got, err, head)
		}
		vkey := oneLine(t, blocks, "verifier-key")
		if l.VerifierKey() != vkey {
			t.Errorf("verifier key %s, doc %s", l.VerifierKey(), vkey)
		}
		// The page's description of the key hash and the signature line,
		// computed by hand rather than by the note package.
		name := "civnode/" + did
		kh := sha256.Sum256(append(append([]byte(name+"\n"), 0x01), pub...))
		if want := name + "+" + hex.EncodeToString(kh[:4]) + "+" + base64.StdEncoding.EncodeToString(append([]byte{0x01}, pub...)); vkey != want {
			t.Errorf("verifier key %s, the page's rule gives %s", vkey, want)
		}
		body := eventlog.CheckpointText(name, head)
		sigLine := "— " + name + " " + base64.StdEncoding.EncodeToString(append(kh[:4:4], ed25519.Sign(key, []byte(body))...)) + "\n"
		if string(signed) != body+"\n"+sigLine {
			t.Errorf("checkpoint is not body, blank line, signature line:\n%s", signed)
		}
		v, err := note.NewVerifier(vkey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := note.Open(signed, note.VerifierList(v)); err != nil {
			t.Errorf("note.Open: %v", err)
		}
		// The one tile of a three-event tree.
		tile := tlog.Tile{H: 8, L: 0, N: 0, W: 3}
		data, err := l.TileData(tile)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := hex.DecodeString(strings.Join(strings.Fields(block(t, blocks, "tile-0-000.p-3")), ""))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, doc) || !bytes.Equal(data, leaves) {
			t.Errorf("tile 0/000.p/3 = %x, doc %x", data, doc)
		}
		for n, path := range map[int64]string{5: "005", 1234: "x001/234", 1234067: "x001/x234/067"} {
			if got := (tlog.Tile{H: 8, L: 0, N: n, W: 256}).Path(); got != "tile/8/0/"+path {
				t.Errorf("tile %d: path %s, the page says tile/0/%s", n, got, path)
			}
		}
	})

	t.Run("node proof", func(t *testing.T) {
		doc := strings.TrimSuffix(block(t, blocks, "node-proof"), "\n")
		lines := strings.Split(doc, "\n")
		if len(lines) != 4 {
			t.Fatalf("node-proof block: %d lines", len(lines))
		}
		nonce, err := hex.DecodeString(lines[3])
		if err != nil {
			t.Fatal(err)
		}
		if got := eventlog.NodeProofBytes(lines[1], lines[2], nonce); string(got) != doc {
			t.Errorf("node proof bytes:\n%q\ndoc %q", got, doc)
		}
		sig, err := l.SignNodeProof(lines[2], nonce)
		if err != nil {
			t.Fatal(err)
		}
		if !ed25519.Verify(pub, []byte(doc), sig) {
			t.Error("the node's proof does not verify over the page's bytes")
		}
	})

	t.Run("registry request", func(t *testing.T) {
		doc := strings.TrimSuffix(block(t, blocks, "registry-signing-bytes"), "\n")
		body := []byte(`{"message":"Summarise this.","input":{"text":"The convoy reached the refinery."}}`)
		got := servicenet.SigningBytes("POST", "/v1/agents/summarizer/invoke", "2026-01-02T03:04:05Z", body)
		if string(got) != doc {
			t.Errorf("registry signing bytes:\n%q\ndoc %q", got, doc)
		}
		if want := base64.StdEncoding.EncodeToString(ed25519.Sign(key, got)); oneLine(t, blocks, "registry-signature") != want {
			t.Errorf("registry signature: doc %s, want %s", oneLine(t, blocks, "registry-signature"), want)
		}
	})

	t.Run("oracle feed", func(t *testing.T) {
		doc := strings.TrimSuffix(block(t, blocks, "oracle-signing-bytes"), "\n")
		payload := json.RawMessage(`{"pair":"ETH/USD","price":"3120.55","at":"2026-11-23T16:30:00Z"}`)
		got, err := commands.FeedSigningBytes("prices.eth-usd", did, 1, 5, payload)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != doc {
			t.Errorf("feed signing bytes:\n%q\ndoc %q", got, doc)
		}
		sig := oneLine(t, blocks, "oracle-signature")
		f := events.OracleFeedPublished{Feed: "prices.eth-usd", PublisherDID: did, Version: 1, Price: 5, Payload: payload, Signature: sig}
		if err := commands.VerifyFeed(f); err != nil {
			t.Errorf("VerifyFeed: %v", err)
		}
		if want := base64.StdEncoding.EncodeToString(ed25519.Sign(key, got)); sig != want {
			t.Errorf("feed signature: doc %s, want %s", sig, want)
		}
	})

	t.Run("x402 payment", func(t *testing.T) {
		checkPaymentExamples(t, blocks)
	})
}

// checkPaymentExamples recomputes the payment examples: the typed data's
// EIP-712 digest, both as the page writes it and as the node builds it from
// the requirement, the development key's signature, and the X-PAYMENT header.
func checkPaymentExamples(t *testing.T, blocks map[string]string) {
	const devKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	// The typed data as viem's signTypedData takes it; its digest is the
	// node's over the same domain and message, once its types are
	// TransferWithAuthorization's (the pinned vector of
	// commands/servicenet, which viem recomputes, holds that digest).
	var td struct {
		Types       map[string][]struct{ Name, Type string } `json:"types"`
		PrimaryType string                                   `json:"primaryType"`
		Domain      struct{ Name, Version, ChainID, VerifyingContract string }
		Message     map[string]any `json:"message"`
	}
	if err := json.Unmarshal([]byte(block(t, blocks, "eip712")), &td); err != nil {
		t.Fatal(err)
	}
	encodeType := func(name string) string {
		fields := make([]string, len(td.Types[name]))
		for i, f := range td.Types[name] {
			fields[i] = f.Type + " " + f.Name
		}
		return name + "(" + strings.Join(fields, ",") + ")"
	}
	if got, want := encodeType("EIP712Domain"), "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"; got != want {
		t.Errorf("the typed data's domain type is %s, want %s", got, want)
	}
	if got, want := encodeType(td.PrimaryType), "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"; got != want || len(td.Types) != 2 {
		t.Errorf("the typed data's primary type is %s (of %d types), want %s alone", got, len(td.Types), want)
	}
	msg := td.Message
	str := func(k string) string { s, _ := msg[k].(string); return s }
	num := func(k string) *big.Int { n, _ := new(big.Int).SetString(str(k), 10); return n }
	nonce, err := hex.DecodeString(strings.TrimPrefix(str("nonce"), "0x"))
	if err != nil || len(nonce) != 32 {
		t.Fatalf("nonce %q: %v", str("nonce"), err)
	}
	typedChainID, _ := new(big.Int).SetString(td.Domain.ChainID, 10)
	digest, err := servicenet.TransferAuthorizationHash(servicenet.TransferAuthorization{
		TokenName: td.Domain.Name, TokenVersion: td.Domain.Version, ChainID: typedChainID, VerifyingContract: td.Domain.VerifyingContract,
		From: str("from"), To: str("to"), Value: num("value"), ValidAfter: num("validAfter"),
		ValidBefore: num("validBefore"), Nonce: [32]byte(nonce),
	})
	if err != nil {
		t.Fatal(err)
	}
	docDigest := oneLine(t, blocks, "eip712-digest")
	if hex.EncodeToString(digest) != docDigest {
		t.Errorf("the typed data's digest is %x, doc %s", digest, docDigest)
	}

	p, err := servicenet.ParsePaymentRequired(http.Header{}, []byte(block(t, blocks, "x402-required")))
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Select("base-sepolia")
	if err != nil {
		t.Fatal(err)
	}
	chainID, err := servicenet.ChainID(req.Network)
	if err != nil {
		t.Fatal(err)
	}
	var extra struct{ Name, Version string }
	json.Unmarshal(req.Extra, &extra)
	auth := servicenet.TransferAuthorization{
		TokenName: extra.Name, TokenVersion: extra.Version, ChainID: chainID, VerifyingContract: req.Asset,
		From: str("from"), To: req.PayTo, Value: num("value"), ValidAfter: num("validAfter"),
		ValidBefore: num("validBefore"), Nonce: [32]byte(nonce),
	}
	if auth.Value.String() != req.Amount {
		t.Errorf("the typed data's value %s is not the requirement's amount %s", auth.Value, req.Amount)
	}
	if got := num("validBefore").Int64() - num("validAfter").Int64(); got <= 0 {
		t.Errorf("validBefore - validAfter = %d", got)
	}
	nodeDigest, err := servicenet.TransferAuthorizationHash(auth)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(nodeDigest) != docDigest {
		t.Errorf("the node's digest of the requirement is %x, doc %s", nodeDigest, docDigest)
	}

	key, err := crypto.HexToECDSA(devKey)
	if err != nil {
		t.Fatal(err)
	}
	if addr := crypto.PubkeyToAddress(key.PublicKey).Hex(); addr != auth.From {
		t.Errorf("the development key's address is %s, the typed data pays from %s", addr, auth.From)
	}
	sig, err := crypto.Sign(nodeDigest, key)
	if err != nil {
		t.Fatal(err)
	}
	sig[crypto.RecoveryIDOffset] += 27
	if doc := oneLine(t, blocks, "eip712-signature"); "0x"+hex.EncodeToString(sig) != doc {
		t.Errorf("signature 0x%x, doc %s", sig, doc)
	}
	if got, err := servicenet.RecoverTransferAuthorization(auth, sig); err != nil || got != auth.From {
		t.Errorf("recovered %s, %v; want %s", got, err, auth.From)
	}

	h, err := servicenet.PaymentHeaderFor(p, req, auth, sig)
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "X-PAYMENT" {
		t.Errorf("header %s, want X-PAYMENT for version 1", h.Name)
	}
	decoded, err := base64.StdEncoding.DecodeString(h.Value)
	if err != nil {
		t.Fatal(err)
	}
	if doc := oneLine(t, blocks, "x-payment"); string(decoded) != doc {
		t.Errorf("X-PAYMENT JSON:\n%s\ndoc %s", decoded, doc)
	}
}
