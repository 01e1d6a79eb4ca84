package configfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.String("addr", "", "")
	fs.StringSlice("governs", nil, "")
	fs.String("registry-url", "x", "")
	fs.String("config", "", "")
	return fs
}

func write(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRead: scalars as written, lists joined, null as "".
func TestRead(t *testing.T) {
	got, err := Read(write(t, "addr: 127.0.0.1:0\ngoverns: [a, b]\nregistry-url: null\n"), flags(), "config")
	if err != nil {
		t.Fatal(err)
	}
	if got["addr"] != "127.0.0.1:0" || got["governs"] != "a,b" || got["registry-url"] != "" || len(got) != 3 {
		t.Errorf("%v", got)
	}
	if got, err := Read(write(t, "# only a comment\n"), flags()); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v %v", got, err)
	}
}

// TestReadRefuses: unknown and excepted keys, a key twice, a nested value.
func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"adr: x\n", `:1: unknown setting "adr"`},
		{"config: other.yaml\n", `:1: unknown setting "config"`},
		{"addr: a\naddr: b\n", ":2: addr is set twice"},
		{"governs: [a, [b]]\n", "a list holds plain values without commas"},
		{"- a\n", "want a mapping of flag names to values"},
	} {
		_, err := Read(write(t, tc.file), flags(), "config")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.file, err, tc.want)
		}
	}
}
