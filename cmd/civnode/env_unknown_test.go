package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// unknownEnvWarning starts the warning serve logs for a CIVNODE_ variable it
// does not know.
const unknownEnvWarning = "unknown environment variable, ignored"

// TestEnvUnknownWarned runs the real binary with a mistyped CIVNODE_
// variable beside known ones: serve warns naming the mistyped one, never its
// value, and names none of those it or civnode's tests and CI read.
func TestEnvUnknownWarned(t *testing.T) {
	// Built, not written out, so that the scan of the repository in
	// TestEnvKnownList does not take them for names civnode reads.
	typo, other := envPrefix+"RATE_LIMT", envPrefix+"NO_SUCH_SETTING"
	const value = "value-4e7a2c"
	t.Setenv(typo, value)
	t.Setenv(other, "")
	knownSet := []string{"CIVNODE_RATE_LIMIT", "CIVNODE_TOKEN", "CIVNODE_SOAK", "CIVNODE_FUZZTIME"}
	for _, name := range knownSet {
		t.Setenv(name, "")
	}
	t.Setenv("CIVNODE_RATE_LIMIT", "100")
	p := startProcess(t, filepath.Join(t.TempDir(), "node"))
	// Once it has stopped, stderr holds every line it wrote.
	p.signal(t, syscall.SIGTERM)
	p.wait(t)
	warned := map[string]bool{}
	for _, line := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(line, unknownEnvWarning) {
			_, name, _ := strings.Cut(line, "variable=")
			warned[name] = true
		}
	}
	for _, name := range []string{typo, other} {
		if !warned[name] {
			t.Errorf("no warning of %s\nstderr:\n%s", name, p.stderr)
		}
	}
	for _, name := range knownSet {
		if warned[name] {
			t.Errorf("warned of %s, which civnode reads", name)
		}
	}
	if strings.Contains(p.stderr.String(), value) {
		t.Errorf("stderr holds the variable's value:\n%s", p.stderr)
	}
}

// envNameRE finds a CIVNODE_ variable's name; one after "variable=" is the
// docs' example of the warning, not a name civnode reads.
var envNameRE = regexp.MustCompile(`(variable=)?\b(CIVNODE_[A-Z0-9_]*[A-Z0-9])`)

// TestEnvKnownList: every CIVNODE_ name in the repository, in code, tests,
// scripts and docs, is a variable serve knows, so that none set for a test
// or another command is reported as a typo; and every name of otherEnv is
// still read somewhere.
func TestEnvKnownList(t *testing.T) {
	flags, err := serveFlags(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	known := knownEnv(flags)
	used := map[string]bool{}
	self, err := filepath.Abs("serveconfig.go")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 {
			return err // a build or a data set, not a source
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b, 0) >= 0 {
			return nil // a binary, such as a civnode built here
		}
		for _, m := range envNameRE.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "" {
				continue
			}
			used[m[2]] = true
			if !known[m[2]] {
				t.Errorf("%s names %s, which serve would report as unknown: add it to otherEnv (serveconfig.go)", path, m[2])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range otherEnv {
		if !used[name] {
			t.Errorf("otherEnv holds %s, which nothing in the repository reads", name)
		}
	}
}
