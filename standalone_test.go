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

// TestRepositoryStandsAlone fails on any file of the repository that cites a
// document outside it. node_modules (installed, not ours) and .git are not
// read; nor are images.
func TestRepositoryStandsAlone(t *testing.T) {
	self := "standalone_test.go"
	checked := 0
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
		for line := 1; sc.Scan(); line++ {
			if m := outsideCitation.FindString(sc.Text()); m != "" {
				t.Errorf("%s:%d cites %q, which is not in the repository: state the rule here or link our own docs", path, line, m)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files read; is the test running from the repository's root?", checked)
	}
}
