package eventlog

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

var jcsSeeds = []string{
	`{"b":1,"a":[true,false,null],"c":{"z":"\u00e9","y":"\ud83d\ude80"}}`,
	`{"\u20ac":1,"\ud83d\ude00":2,"e\u0301":3,"a":4,"\ufb33":5}`,
	`{"n":[0,-0,1,-1,123456789012345,1234567890123456,9007199254740993,1e21,1E-7,0.1,1.5e300,-0.0,100,1e2]}`,
	`{"s":"a\nb\t\"q\"\\ \u0001 \u007f </script> \u2028 \/ \b\f\r"}`,
	`  {"a" : { "b" : [ 1 , 2 ] } }  `,
	`[1,"x",{"k":[]},{}]`, `"top"`, `42`, `true`,
	`{"a":1,"a":2}`, `{"a":}`, `{"a":1,}`, `[01]`, `[1.]`, `{"a":"\ud800"}`, `{"a":"\udc00x"}`,
	"{\"a\":\"\xff\"}", `{"a":"x` + "\x01" + `"}`, `{"a":1e400}`, `nul`, `{} x`, ``,
	strings.Repeat("[", 40) + strings.Repeat("]", 40),
	strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
}

// FuzzCanonicalJSON holds canonicalJSON equal to gowebpki/jcs: the same bytes
// for every input one accepts, and the same inputs rejected.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range jcsSeeds {
		f.Add([]byte(s))
	}
	if golden, err := os.ReadFile("testdata/golden/bundle.json"); err == nil {
		f.Add(golden)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := jcs.Transform(in)
		got, gotErr := canonicalJSON(in)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("input %q: jcs err %v, ours %v", in, wantErr, gotErr)
		}
		if wantErr == nil && !bytes.Equal(got, want) {
			t.Fatalf("input %q:\n jcs %s\nours %s", in, want, got)
		}
	})
}

func BenchmarkCanonicalJSON(b *testing.B) {
	in := []byte(`{"mission_id":"019b0000-0000-7000-8000-000000000001","title":"Escort the convoy","publisher":"genesis","publisher_kind":"planetary_government","domain":"security","subnet_id":"genesis","required_role":"enforcer","reward":{"agent_credit":25,"reputation":3,"capacity":1,"treasury_share_credit":5}}`)
	b.Run("ours", func(b *testing.B) {
		for b.Loop() {
			canonicalJSON(in)
		}
	})
	b.Run("gowebpki", func(b *testing.B) {
		for b.Loop() {
			jcs.Transform(in)
		}
	})
}
