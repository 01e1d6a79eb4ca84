package civnode_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideCitation matches a citation of a document that is not in the
// repository: the working notes the node was designed from. A reader of the
// repository cannot follow such a reference, so every rule the node keeps is
// stated here, in docs/ (docs/wire-formats.md for the formats), a doc.go or a
// comment beside the code.
var outsideCitation = regexp.MustCompile(
	`\bwire\.md` + // the wire contract: docs/wire-formats.md replaces it
		`|control-api\.md` + // the control API's text: docs/api.md
		`|\bdesign\.md|\breview\.md|\bstyle\.md` +
		`|spec/vectors` + // the test vector's origin: eventlog/testdata/vectors
		`|\.\./shared|/work/shared` +
		`|\bspec,? "`) // a section of the control API's text, as in (spec "Reward")

// pendingCitations are files whose citations are left to the change that is
// moving them out of cmd/civnode, with how many citing lines each holds. The
// test fails when an entry is stale (the file is gone or holds another
// count), so the list shrinks to nothing as they are fixed. Never add to it.
var pendingCitations = map[string]int{
	"cmd/civnode/oracle_socket.go":       2,
	"cmd/civnode/oracle_socket_test.go":  1,
	"cmd/civnode/transparency.go":        1,
	"cmd/civnode/transparency_client.go": 1,
	"cmd/civnode/transparency_event.go":  1,
	"cmd/civnode/transparency_key.go":    1,
}

// TestRepositoryStandsAlone fails on any file of the repository that cites a
// document outside it. node_modules (installed, not ours) and .git are not
// read; nor are images.
func TestRepositoryStandsAlone(t *testing.T) {
	self := "standalone_test.go"
	checked := 0
	pending := make(map[string]int)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if path == self || !d.Type().IsRegular() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".png", ".jpg", ".jpeg", ".gif", ".ico", ".woff", ".woff2", ".gz", ".zip":
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // binary
		}
		checked++
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64*1024), len(b)+1)
		slash := filepath.ToSlash(path)
		for line := 1; sc.Scan(); line++ {
			m := outsideCitation.FindString(sc.Text())
			switch {
			case m == "":
			case pendingCitations[slash] > 0:
				pending[slash]++
			default:
				t.Errorf("%s:%d cites %q, which is not in the repository: state the rule here or link our own docs", path, line, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range pendingCitations {
		if pending[path] != want {
			t.Errorf("%s holds %d citing lines, pendingCitations says %d: fix its citations and drop its entry", path, pending[path], want)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d files read; is the test running from the repository's root?", checked)
	}
}
