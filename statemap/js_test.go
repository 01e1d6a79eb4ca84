package statemap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/statemap"
)

// jsVerifier is the state proof verifier written apart from this package, in
// JavaScript with only Node's SHA-256, for independent verifiers to read and
// copy.
const jsVerifier = "../docs/examples/verify-state-proof.mjs"

// TestJSVerifier runs the JavaScript verifier on testdata/vectors.json, which
// it must pass case by case, and on copies that it must fail: a valid proof
// with a changed sibling, a refused proof marked valid, and proofs whose
// hashes are spelt in a way the fold alone would accept but no honest node
// writes. So the two implementations agree on every vector, and the
// JavaScript one is seen to refuse what the Go one refuses.
func TestJSVerifier(t *testing.T) {
	node := testtool.Need(t, "node", "install Node.js 20 or later")
	vf := readVectors(t)
	cases := 0
	for _, m := range vf.Maps {
		cases += 1 + len(m.Proofs) // the map's root, then each proof
	}

	t.Run("vectors", func(t *testing.T) {
		out, err := runJSVerifier(t, node, "testdata/vectors.json")
		if err != nil || !strings.Contains(out, fmt.Sprintf("\nok: %d cases", cases)) {
			t.Fatalf("verifier on the vectors: %v\n%s", err, out)
		}
		// Each refused proof is refused for the same kind of reason as
		// Verify gives: a malformed shape, or a fold that misses the root.
		// The fold alone refuses most malformed shapes too, so only this
		// shows the JavaScript verifier checks them.
		var lines []string
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "pass: ") || strings.HasPrefix(line, "FAIL: ") {
				lines = append(lines, line)
			}
		}
		if len(lines) != cases {
			t.Fatalf("%d case lines, want %d:\n%s", len(lines), cases, out)
		}
		i := 0
		for _, m := range vf.Maps {
			i++ // the map's root
			for _, p := range m.Proofs {
				line := lines[i]
				i++
				if p["valid"] == true {
					continue
				}
				err := goVerify(t, m.raw, p)
				malformed := strings.Contains(line, ": refused: malformed state proof: ")
				if !errors.Is(err, statemap.ErrProofFormat) && !errors.Is(err, statemap.ErrProofMismatch) || malformed != errors.Is(err, statemap.ErrProofFormat) {
					t.Errorf("Verify: %v; JavaScript: %s", err, line)
				}
			}
		}
	})

	t.Run("valid proof with a changed sibling", func(t *testing.T) {
		v := readVectors(t)
		m, p := firstValid(t, v, func(p map[string]any) bool { return len(p["siblings"].([]any)) > 0 })
		sib := hashOf(t, p["siblings"].([]any)[0])
		sib[31] ^= 1
		p["siblings"].([]any)[0] = sib.String()
		expectFailure(t, node, v, m["name"].(string)+": "+p["name"].(string)+": must verify, but refused")
	})

	t.Run("refused proof marked valid", func(t *testing.T) {
		v := readVectors(t)
		var m, p map[string]any
		for _, mm := range v.Maps {
			for _, pp := range mm.Proofs {
				if p == nil && pp["valid"] == false {
					m, p = mm.raw, pp
				}
			}
		}
		if p == nil {
			t.Fatal("no refused proof in the vectors")
		}
		p["valid"] = true
		expectFailure(t, node, v, m["name"].(string)+": "+p["name"].(string)+": ")
	})

	t.Run("hashes no honest node writes", func(t *testing.T) {
		v := readVectors(t)
		m, valid := firstValid(t, v, func(p map[string]any) bool {
			return p["value"] != nil && len(p["siblings"].([]any)) > 0
		})
		text := valid["siblings"].([]any)[0].(string)
		variant := func(name string, change func(p map[string]any)) map[string]any {
			p := make(map[string]any)
			for k, x := range valid {
				p[k] = x
			}
			p["siblings"] = append([]any{}, valid["siblings"].([]any)...)
			p["name"], p["valid"] = name, false
			change(p)
			return p
		}
		many := make([]any, statemap.Depth+1)
		for i := range many {
			many[i] = text
		}
		refused := []map[string]any{
			// The same 32 bytes as the sibling, in another spelling: the
			// fold alone would accept both.
			variant("sibling without padding", func(p map[string]any) { p["siblings"].([]any)[0] = strings.TrimRight(text, "=") }),
			variant("sibling with stray bits", func(p map[string]any) { p["siblings"].([]any)[0] = withStrayBits(t, text) }),
			variant("sibling with a line break", func(p map[string]any) { p["siblings"].([]any)[0] = text[:20] + "\n" + text[20:] }),
			variant("more siblings than the depth", func(p map[string]any) { p["siblings"] = many }),
			variant("membership with key_hash alone", func(p map[string]any) { p["key_hash"] = text }),
		}
		for _, p := range refused {
			// The Go reader refuses each of them too.
			b := proofJSON(t, p)
			if _, err := statemap.ParseProof(b); err == nil {
				t.Fatalf("%s: ParseProof accepts %s", p["name"], b)
			}
		}
		m["proofs"] = anySlice(refused)
		v.Maps = []vectorMap{{raw: m, Proofs: refused}}
		out, err := runJSVerifier(t, node, writeVectors(t, v))
		if err != nil || !strings.Contains(out, fmt.Sprintf("\nok: %d cases", 1+len(refused))) {
			t.Fatalf("verifier on the respelt proofs: %v\n%s", err, out)
		}
		for _, p := range refused {
			if want := fmt.Sprintf("pass: %s: %s: refused: malformed state proof", m["name"], p["name"]); !strings.Contains(out, want) {
				t.Errorf("no line %q in\n%s", want, out)
			}
		}
	})
}

// TestJSVerifierDocExamples holds the worked examples of
// docs/state-proofs.md to the vectors: each is a valid proof of the vectors'
// map, byte for byte, that Verify and the JavaScript verifier accept.
func TestJSVerifierDocExamples(t *testing.T) {
	node := testtool.Need(t, "node", "install Node.js 20 or later")
	v := readVectors(t)
	var m vectorMap
	for _, vm := range v.Maps {
		if vm.raw["name"] == "seven entries" {
			m = vm
		}
	}
	if m.raw == nil {
		t.Fatal(`no map "seven entries" in the vectors`)
	}
	var cases []any
	for _, name := range []string{"membership-example", "absence-example"} {
		var ex struct {
			Root  statemap.Hash   `json:"root"`
			Key   string          `json:"key"`
			Value *string         `json:"value"`
			Proof json.RawMessage `json:"proof"`
		}
		dec := json.NewDecoder(strings.NewReader(docBlock(t, "../docs/state-proofs.md", name)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ex); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		proof, err := statemap.ParseProof(ex.Proof)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var value []byte
		if ex.Value != nil {
			value = []byte(*ex.Value)
		}
		if err := statemap.Verify(ex.Root, ex.Key, value, proof); err != nil {
			t.Errorf("%s: Verify: %v", name, err)
		}
		if ex.Root != hashOf(t, m.raw["state_root"]) {
			t.Errorf("%s: root %s is not the vectors' %s", name, ex.Root, m.raw["state_root"])
		}
		found := false
		for _, p := range m.Proofs {
			if p["valid"] != true || p["key"] != ex.Key {
				continue
			}
			want, err := statemap.ParseProof(proofJSON(t, p))
			found = err == nil && reflect.DeepEqual(want, proof) && reflect.DeepEqual(p["value"], anyValue(ex.Value))
		}
		if !found {
			t.Errorf("%s: no valid proof of %s in the vectors has this value and proof", name, ex.Key)
		}
		c := map[string]any{"name": name, "valid": true, "key": ex.Key, "value": anyValue(ex.Value)}
		if err := json.Unmarshal(ex.Proof, &c); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, c)
	}
	m.raw["proofs"] = cases
	v.Maps = []vectorMap{m}
	out, err := runJSVerifier(t, node, writeVectors(t, v))
	if err != nil || !strings.Contains(out, fmt.Sprintf("\nok: %d cases", 1+len(cases))) {
		t.Fatalf("verifier on the examples of docs/state-proofs.md: %v\n%s", err, out)
	}
}

// anyValue is a case's value as JSON decodes it into an any: a string, or
// nil for absence.
func anyValue(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// docBlock returns the text of the fenced code block of the markdown file at
// path whose info string names it (```json name).
func docBlock(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	open, inside, found := false, false, false
	for line := range strings.Lines(string(b)) {
		switch {
		case !open && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			open, inside = true, len(info) >= 2 && info[1] == name
			if inside && found {
				t.Fatalf("%s: two blocks named %s", path, name)
			}
			found = found || inside
		case open && strings.HasPrefix(strings.TrimSpace(line), "```"):
			open, inside = false, false
		case inside:
			body.WriteString(line)
		}
	}
	if !found {
		t.Fatalf("%s has no block named %s", path, name)
	}
	return body.String()
}

// vectors is testdata/vectors.json read as plain JSON values, so that a
// copy can be changed in any member and written back.
type vectors struct {
	raw  map[string]any
	Maps []vectorMap
}

type vectorMap struct {
	raw    map[string]any
	Proofs []map[string]any
}

func readVectors(t *testing.T) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v.raw); err != nil {
		t.Fatal(err)
	}
	maps, _ := v.raw["maps"].([]any)
	for _, m := range maps {
		mm := m.(map[string]any)
		vm := vectorMap{raw: mm}
		for _, p := range mm["proofs"].([]any) {
			vm.Proofs = append(vm.Proofs, p.(map[string]any))
		}
		v.Maps = append(v.Maps, vm)
	}
	if len(v.Maps) == 0 {
		t.Fatal("no maps in testdata/vectors.json")
	}
	return v
}

// writeVectors writes v, its maps as v.Maps holds them, to a temporary file
// and returns its path.
func writeVectors(t *testing.T, v vectors) string {
	t.Helper()
	maps := make([]any, len(v.Maps))
	for i, m := range v.Maps {
		maps[i] = m.raw
	}
	v.raw["maps"] = maps
	b, err := json.Marshal(v.raw)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "vectors.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// firstValid returns the first valid proof that ok accepts, and its map.
func firstValid(t *testing.T, v vectors, ok func(p map[string]any) bool) (m, p map[string]any) {
	t.Helper()
	for _, vm := range v.Maps {
		for _, vp := range vm.Proofs {
			if vp["valid"] == true && ok(vp) {
				return vm.raw, vp
			}
		}
	}
	t.Fatal("no such valid proof in the vectors")
	return nil, nil
}

// expectFailure runs the verifier on v, which must fail it (exit 1, not a
// usage error or a crash) at the case whose line starts with want.
func expectFailure(t *testing.T, node string, v vectors, want string) {
	t.Helper()
	out, err := runJSVerifier(t, node, writeVectors(t, v))
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("verifier on a tampered copy: %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(out, "\nFAIL: "+want) || !strings.Contains(out, "\ninvalid: 1 of ") {
		t.Fatalf("verifier on a tampered copy names no failure %q, or more than one:\n%s", want, out)
	}
}

func runJSVerifier(t *testing.T, node, vectorsPath string) (string, error) {
	t.Helper()
	// Reading the script makes it an input of this test for go test's cache,
	// which does not see what node reads.
	if _, err := os.ReadFile(jsVerifier); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, jsVerifier, "--vectors", vectorsPath).CombinedOutput()
	return "\n" + string(out), err
}

// goVerify checks proof p of map m with Verify.
func goVerify(t *testing.T, m, p map[string]any) error {
	t.Helper()
	proof, err := statemap.ParseProof(proofJSON(t, p))
	if err != nil {
		return err
	}
	var value []byte
	if s, ok := p["value"].(string); ok {
		value = []byte(s)
	}
	key, _ := p["key"].(string)
	return statemap.Verify(hashOf(t, m["state_root"]), key, value, proof)
}

// proofJSON is the proof object of vector case p: its siblings, and its
// key_hash and value_hash where it has them.
func proofJSON(t *testing.T, p map[string]any) []byte {
	t.Helper()
	proof := map[string]any{"siblings": p["siblings"]}
	for _, name := range []string{"key_hash", "value_hash"} {
		if h, ok := p[name]; ok {
			proof[name] = h
		}
	}
	b, err := json.Marshal(proof)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hashOf(t *testing.T, text any) statemap.Hash {
	t.Helper()
	var h statemap.Hash
	s, _ := text.(string)
	if err := h.UnmarshalText([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return h
}

// withStrayBits spells the hash with the 2 unused bits of its last base64
// digit set: the same 32 bytes to a lenient decoder.
func withStrayBits(t *testing.T, text string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := strings.IndexByte(alphabet, text[42])
	if len(text) != 44 || i < 0 || i&3 != 0 {
		t.Fatalf("%q is not a canonical hash", text)
	}
	return text[:42] + string(alphabet[i|1]) + text[43:]
}

func anySlice(ps []map[string]any) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}
