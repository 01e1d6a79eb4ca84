package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/civnode/civnode/eventlog"
)

// TestVerifyPrettyPrintedBundle exports a node's chain, pretty-prints it as
// `python3 -m json.tool` does (four-space indent, ": " after each name, every
// non-ASCII character as a \u escape), and requires civnode verify to accept the
// copy from a file, from stdin, and as the built binary; a tampered copy is
// still rejected at its seq. The copy was once refused at seq 1:
// "genesis payload does not carry the node's public key".
func TestVerifyPrettyPrintedBundle(t *testing.T) {
	dir := t.TempDir()
	startNode(t, dir).stop(t)
	l := openTestLog(t, dir)
	_, err := l.Append(context.Background(),
		eventlog.Draft{Type: "test.note", Payload: map[string]string{"title": "Convoy éscort — zone 7 🚀", "path": "a/b"}},
		eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": 3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, nil, "export", "--data-dir", dir)
	if res.code != 0 {
		t.Fatalf("export: code %d, stderr %q", res.code, res.stderr)
	}
	pretty := jsonTool(t, []byte(res.stdout))
	if !bytes.Contains(pretty, []byte(`"public_key": "`)) || !bytes.Contains(pretty, []byte(`\ud83d\ude80`)) {
		t.Fatalf("the copy is not written as json.tool writes it:\n%s", pretty)
	}

	file := filepath.Join(t.TempDir(), "b.json")
	if err := os.WriteFile(file, pretty, 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, nil, "verify", file)
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 3 events") {
		t.Errorf("verify FILE of a pretty-printed bundle: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	res = runCLI(t, pretty, "verify", "-")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 3 events") {
		t.Errorf("verify - of a pretty-printed bundle: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	if out, code := runBinaryStdin(t, pretty, "verify", "-"); code != 0 || !strings.HasPrefix(out, "ok: 3 events") {
		t.Errorf("civnode verify - (binary) of a pretty-printed bundle: exit %d, output %q", code, out)
	}

	tampered := bytes.Replace(pretty, []byte(`"n": 3`), []byte(`"n": 4`), 1)
	if bytes.Equal(tampered, pretty) {
		t.Fatal(`"n": 3 is not in the pretty-printed bundle`)
	}
	res = runCLI(t, tampered, "verify", "-")
	if res.code != 1 || !strings.HasPrefix(res.stdout, "invalid: broken chain at seq 3: id does not match") {
		t.Errorf("verify - of a tampered pretty-printed bundle: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// jsonTool re-writes a JSON document as `python3 -m json.tool` does by default:
// indented by four spaces, ": " after each member name, and every non-ASCII
// character escaped, astral ones as a UTF-16 surrogate pair.
func jsonTool(t *testing.T, doc []byte) []byte {
	t.Helper()
	var indented bytes.Buffer
	if err := json.Indent(&indented, doc, "", "    "); err != nil {
		t.Fatal(err)
	}
	// Non-ASCII bytes occur only inside strings, where a \u escape means the
	// same character.
	var out bytes.Buffer
	for _, r := range indented.String() {
		switch {
		case r < 0x80:
			out.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&out, `\u%04x`, r)
		}
	}
	out.WriteByte('\n')
	return out.Bytes()
}
