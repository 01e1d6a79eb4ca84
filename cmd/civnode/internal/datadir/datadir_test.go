package datadir

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestNodeKeyCreatedOnceAndReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node.key")
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	k1, err := LoadOrCreateNodeKey(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode %v, want 0600", got)
	}
	pemBytes, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Errorf("node.key does not start with a PKCS#8 PEM header: %.30q", pemBytes)
	}
	k2, err := LoadOrCreateNodeKey(path, logger)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Error("second start generated a new key")
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want only node.key (no temporary files)", len(entries))
	}
}

// TestSecretFilesConcurrentFirstStart: of several simultaneous first starts,
// exactly one secret is created and every caller gets it.
func TestSecretFilesConcurrentFirstStart(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	tokens := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i], errs[i] = LoadOrCreateControlToken(filepath.Join(dir, "control.token"), discardLogger())
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if tokens[i] != tokens[0] {
			t.Fatalf("caller %d got a different token", i)
		}
	}
}

// TestLooseSecretModeWarns: a group- or world-readable key or token is used, with a
// warning that names the file but never its content.
func TestLooseSecretModeWarns(t *testing.T) {
	dir := t.TempDir()
	keyPath, tokPath := filepath.Join(dir, "node.key"), filepath.Join(dir, "control.token")
	key, err := LoadOrCreateNodeKey(keyPath, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := LoadOrCreateControlToken(tokPath, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{keyPath, tokPath} {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	key2, err := LoadNodeKey(keyPath, logger)
	if err != nil || !key.Equal(key2) {
		t.Fatalf("loose key not loaded: %v", err)
	}
	tok2, err := LoadControlToken(tokPath, logger)
	if err != nil || tok2 != tok {
		t.Fatalf("loose token not loaded: %v", err)
	}
	out := logs.String()
	if strings.Count(out, "level=WARN") != 2 || !strings.Contains(out, keyPath) || !strings.Contains(out, tokPath) {
		t.Errorf("want one warning per file, got:\n%s", out)
	}
	pemBytes, _ := os.ReadFile(keyPath)
	body := strings.Split(string(pemBytes), "\n")[1]
	if strings.Contains(out, tok) || strings.Contains(out, body) {
		t.Errorf("a warning leaks the secret:\n%s", out)
	}
}

func TestBadSecretFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, content string }{
		{"node.key", "not pem"},
		{"control.token", "\n  \n"},
	} {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadOrCreateNodeKey(filepath.Join(dir, "node.key"), discardLogger()); err == nil || !strings.Contains(err.Error(), "want a PEM") {
		t.Errorf("bad key: err %v", err)
	}
	if _, err := LoadOrCreateControlToken(filepath.Join(dir, "control.token"), discardLogger()); err == nil || !strings.Contains(err.Error(), "want one non-empty line") {
		t.Errorf("bad token: err %v", err)
	}
}

func TestResolve(t *testing.T) {
	home := t.TempDir()
	tests := []struct{ flag, env, want string }{
		{flag: "/srv/a", env: "/srv/b", want: "/srv/a"},
		{env: "/srv/b", want: "/srv/b"},
		{want: filepath.Join(home, ".civnode")},
	}
	for _, tt := range tests {
		getenv := func(k string) string {
			if k == "CIVNODE_DATA_DIR" {
				return tt.env
			}
			return ""
		}
		got, err := Resolve(tt.flag, getenv, func() (string, error) { return home, nil })
		if err != nil || string(got) != tt.want {
			t.Errorf("flag %q env %q: got %q, %v; want %q", tt.flag, tt.env, got, err, tt.want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
