package statemap

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"testing"
)

var rewrite = flag.Bool("update", false, "rewrite testdata/vectors.json from the reference")

const vectorsPath = "testdata/vectors.json"

// vectorFile is testdata/vectors.json: a small map, its root, and proofs
// that a verifier in any language must accept (valid) or refuse. Values are
// the records' bytes as JSON strings (their UTF-8 text).
type vectorFile struct {
	Comment string      `json:"comment"`
	Maps    []vectorMap `json:"maps"`
}

type vectorMap struct {
	Name      string        `json:"name"`
	Entries   []vectorEntry `json:"entries"`
	StateRoot Hash          `json:"state_root"`
	Proofs    []vectorProof `json:"proofs"`
}

type vectorEntry struct {
	Key       string `json:"key"`
	Value     string `json:"value"`
	KeyHash   Hash   `json:"key_hash"`
	ValueHash Hash   `json:"value_hash"`
}

type vectorProof struct {
	Name  string  `json:"name"`
	Valid bool    `json:"valid"`
	Key   string  `json:"key"`
	Value *string `json:"value"`
	Proof
}

// vectorEntries are the map of the vectors: records shaped like the node's,
// chosen so that the proofs below show every case, an empty sibling among
// them.
var vectorEntries = [][2]string{
	{"identity/did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", `{"agent_did":"did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK","credits":120,"name":"ada"}`},
	{"identity/did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", `{"agent_did":"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG","credits":0,"name":"grace"}`},
	{"mission/0b9f4c2e-7d1a-4e55-9a63-2f1c8d7e6a10", `{"id":"0b9f4c2e-7d1a-4e55-9a63-2f1c8d7e6a10","reward":50,"state":"open"}`},
	{"mission/5e2a9d41-3c7b-4f08-b1d6-8a4e0c9f2b73", `{"id":"5e2a9d41-3c7b-4f08-b1d6-8a4e0c9f2b73","reward":5,"state":"completed"}`},
	{"mission/9c7e1b58-6f2d-4a39-8e04-d5b3a1f6c829", `{"id":"9c7e1b58-6f2d-4a39-8e04-d5b3a1f6c829","reward":12,"state":"assigned"}`},
	{"mission/e4d8a6f3-1b5c-4972-a0e8-7c3f9b2d5e61", `{"id":"e4d8a6f3-1b5c-4972-a0e8-7c3f9b2d5e61","reward":1,"state":"open"}`},
	{"identity/did:key:z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2", `{"agent_did":"did:key:z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2","credits":7,"name":"linus"}`},
}

// vectorAbsent are keys without records, their proofs ending in an empty
// subtree or at another entry.
var vectorAbsent = []string{"mission/absent-0", "mission/absent-1", "mission/absent-3", "mission/absent-4", "identity/did:key:none"}

const vectorsComment = "statemap test vectors: state maps, their roots, and proofs a verifier must accept (valid) or refuse. " +
	"k = SHA-256(key); leaf = SHA-256(0x00 || k || SHA-256(value)); node = SHA-256(0x01 || left || right); empty = 32 zero bytes. " +
	"value is the record's UTF-8 text, null for an absence proof; hashes are standard base64."

// makeVectors computes the file's content by the reference alone: the
// empty map, a map of one entry (proofs of depth 0), and vectorEntries.
func makeVectors() vectorFile {
	return vectorFile{Comment: vectorsComment, Maps: []vectorMap{
		makeVectorMap("empty", nil, vectorAbsent[:1]),
		makeVectorMap("one entry", vectorEntries[:1], vectorAbsent[:1]),
		makeVectorMap("seven entries", vectorEntries, vectorAbsent),
	}}
}

func makeVectorMap(name string, entries [][2]string, absent []string) vectorMap {
	m := make(map[Hash]Hash)
	vm := vectorMap{Name: name, Entries: []vectorEntry{}}
	for _, kv := range entries {
		k, v := HashKey(kv[0]), HashValue([]byte(kv[1]))
		m[k] = v
		vm.Entries = append(vm.Entries, vectorEntry{kv[0], kv[1], k, v})
	}
	vm.StateRoot = refRoot(m)
	add := func(name string, valid bool, key string, value *string, p Proof) {
		vm.Proofs = append(vm.Proofs, vectorProof{name, valid, key, value, p})
	}
	clone := func(p Proof) Proof {
		p.Siblings = append([]Hash{}, p.Siblings...)
		return p
	}
	str := func(s string) *string { return &s }
	for i, kv := range entries {
		p := refProve(m, HashKey(kv[0]))
		add("member "+kv[0], true, kv[0], str(kv[1]), p)
		if i > 0 {
			continue
		}
		add("member with a changed value", false, kv[0], str(kv[1]+" "), p)
		add("member's proof claimed as absence", false, kv[0], nil, p)
		add("member's proof for another key", false, vectorEntries[1][0], str(kv[1]), p)
		q := clone(p)
		q.Siblings = append(q.Siblings, Empty)
		add("member with an empty sibling added below (not minimal)", false, kv[0], str(kv[1]), q)
		q = clone(p)
		q.Siblings = append([]Hash{HashValue(nil)}, q.Siblings...)
		add("member with a sibling added above", false, kv[0], str(kv[1]), q)
		if len(p.Siblings) == 0 {
			continue
		}
		q = clone(p)
		q.Siblings[len(q.Siblings)-1][0] ^= 1
		add("member with its last sibling changed", false, kv[0], str(kv[1]), q)
		q = clone(p)
		q.Siblings = q.Siblings[:len(q.Siblings)-1]
		add("member with its last sibling removed", false, kv[0], str(kv[1]), q)
	}
	for _, key := range absent {
		p := refProve(m, HashKey(key))
		add("absent "+key, true, key, nil, p)
		switch {
		case p.KeyHash != nil:
			q := clone(p)
			own := HashKey(key)
			q.KeyHash = &own
			add("absence naming the key itself as the other entry", false, key, nil, q)
			if len(p.Siblings) > 0 {
				q = clone(p)
				other := *q.KeyHash
				other[0] ^= 0x80
				q.KeyHash = &other
				add("absence naming an other entry off the key's path", false, key, nil, q)
			}
			add("absence-other claimed as membership", false, key, str(`{}`), p)
		default:
			add("absence-empty claimed as membership", false, key, str(`{}`), p)
		}
	}
	return vm
}

// TestVectors holds testdata/vectors.json to the reference, to Update and
// Prove, and to Verify: each valid proof verifies, each other is refused.
// go test -run TestVectors -update rewrites the file.
func TestVectors(t *testing.T) {
	want := makeVectors()
	b, err := json.MarshalIndent(want, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *rewrite {
		if err := os.WriteFile(vectorsPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, b) {
		t.Fatalf("%s differs from the reference's vectors (go test -run TestVectors -update rewrites it)", vectorsPath)
	}
	var vf vectorFile
	dec := json.NewDecoder(bytes.NewReader(file))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vf); err != nil {
		t.Fatal(err)
	}
	shapes := make(map[string]bool)
	for _, vm := range vf.Maps {
		checkVectorMap(t, vm, shapes)
	}
	for _, shape := range []string{"membership", "absence-other", "absence-empty", "an empty sibling", "depth 3 or more", "depth 0"} {
		if !shapes[shape] {
			t.Errorf("no valid proof in the vectors shows %s", shape)
		}
	}
}

// checkVectorMap builds vm's map with Update and checks each of its proofs,
// noting in shapes what the valid ones show.
func checkVectorMap(t *testing.T, vm vectorMap, shapes map[string]bool) {
	t.Helper()
	s := new(MemStore)
	var cs []Change
	for _, e := range vm.Entries {
		if e.KeyHash != HashKey(e.Key) || e.ValueHash != HashValue([]byte(e.Value)) {
			t.Fatalf("%s: entry %s: hashes differ from its key and value", vm.Name, e.Key)
		}
		cs = append(cs, Put(e.Key, []byte(e.Value)))
	}
	if root, n, err := Update(s, s, cs); err != nil || root != vm.StateRoot || n != uint64(len(vm.Entries)) {
		t.Fatalf("%s: Update: root %s, %d entries, %v; file's root %s", vm.Name, root, n, err, vm.StateRoot)
	}
	for _, vp := range vm.Proofs {
		var value []byte
		if vp.Value != nil {
			value = []byte(*vp.Value)
		}
		err := Verify(vm.StateRoot, vp.Key, value, vp.Proof)
		if vp.Valid != (err == nil) {
			t.Errorf("%s: %s: valid %v, Verify: %v", vm.Name, vp.Name, vp.Valid, err)
		}
		if !vp.Valid {
			continue
		}
		got, err := Prove(s, HashKey(vp.Key))
		if err != nil || !reflect.DeepEqual(got, vp.Proof) {
			t.Errorf("%s: %s: Prove gives %s (%v), file has %s", vm.Name, vp.Name, proofText(got), err, proofText(vp.Proof))
		}
		switch {
		case vp.Value != nil:
			shapes["membership"] = true
		case vp.KeyHash != nil:
			shapes["absence-other"] = true
		default:
			shapes["absence-empty"] = true
		}
		if len(vp.Siblings) == 0 {
			shapes["depth 0"] = true
		}
		for i, h := range vp.Siblings {
			if h == Empty {
				shapes["an empty sibling"] = true
			}
			if i >= 2 {
				shapes["depth 3 or more"] = true
			}
		}
	}
}
