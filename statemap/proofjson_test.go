package statemap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestParseProofRefuses: each spelling that is not exactly a proof's JSON
// is refused as ErrProofFormat.
func TestParseProofRefuses(t *testing.T) {
	h := Hash{1, 2, 3}.String()
	short := strings.Repeat("A", 40) + "=="
	for name, text := range map[string]string{
		"not an object":              `[]`,
		"no siblings":                `{}`,
		"null siblings":              `{"siblings":null}`,
		"siblings not an array":      `{"siblings":"` + h + `"}`,
		"a sibling of 31 bytes":      `{"siblings":["` + short + `"]}`,
		"a sibling without padding":  `{"siblings":["` + strings.TrimSuffix(h, "=") + `"]}`,
		"a sibling in base64url":     `{"siblings":["` + strings.NewReplacer("+", "-", "/", "_").Replace(Hash{0xfb, 0xff}.String()) + `"]}`,
		"a sibling with stray bits":  `{"siblings":["` + h[:42] + `B="]}`,
		"a number as a sibling":      `{"siblings":[1]}`,
		"siblings twice":             `{"siblings":[],"siblings":[]}`,
		"an unknown field":           `{"siblings":[],"depth":0}`,
		"a field in another case":    `{"Siblings":[]}`,
		"key_hash alone":             `{"siblings":[],"key_hash":"` + h + `"}`,
		"value_hash alone":           `{"siblings":[],"value_hash":"` + h + `"}`,
		"a null key_hash":            `{"siblings":[],"key_hash":null,"value_hash":"` + h + `"}`,
		"data after the object":      `{"siblings":[]} {}`,
		"an unfinished object":       `{"siblings":[]`,
		"more than Depth siblings":   `{"siblings":[` + strings.Repeat(`"`+h+`",`, Depth) + `"` + h + `"]}`,
		"a key_hash of 33 bytes":     `{"siblings":[],"key_hash":"` + strings.Repeat("A", 44) + `","value_hash":"` + h + `"}`,
		"an empty string as a value": `{"siblings":[],"key_hash":"","value_hash":"` + h + `"}`,
	} {
		if p, err := ParseProof([]byte(text)); !errors.Is(err, ErrProofFormat) {
			t.Errorf("%s: %s read as %s, %v", name, text, proofText(p), err)
		}
	}
}

// TestProofJSON: a proof writes the field names of GET /v1/state/proof,
// flat inside an answer that embeds it, and reads back the same.
func TestProofJSON(t *testing.T) {
	k, v := Hash{9}, Hash{8}
	for _, tc := range []struct {
		p    Proof
		want string
	}{
		{Proof{Siblings: []Hash{}}, `{"key":"mission/x","siblings":[]}`},
		{Proof{Siblings: []Hash{{}, {0xff}}, KeyHash: &k, ValueHash: &v}, `{"key":"mission/x","siblings":["` + Empty.String() +
			`","` + Hash{0xff}.String() + `"],"key_hash":"` + k.String() + `","value_hash":"` + v.String() + `"}`},
	} {
		answer := struct {
			Key string `json:"key"`
			Proof
		}{"mission/x", tc.p}
		b, err := json.Marshal(answer)
		if err != nil || string(b) != tc.want {
			t.Fatalf("answer written as %s (%v), want %s", b, err, tc.want)
		}
		var back struct {
			Key string `json:"key"`
			Proof
		}
		if err := json.Unmarshal(b, &back); err != nil || proofText(back.Proof) != proofText(tc.p) {
			t.Fatalf("%s read back as %s (%v)", b, proofText(back.Proof), err)
		}
		p, err := ParseProof([]byte(proofText(tc.p)))
		if err != nil || proofText(p) != proofText(tc.p) {
			t.Fatalf("ParseProof(%s) = %s, %v", proofText(tc.p), proofText(p), err)
		}
	}
	var h Hash
	if err := json.Unmarshal([]byte(`"AAAA"`), &h); !errors.Is(err, ErrHashEncoding) {
		t.Fatalf("a 3-byte hash read: %v", err)
	}
}
