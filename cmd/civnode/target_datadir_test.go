package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTargetDataDirRequired: restore and import make a data dir only where
// --data-dir names it. Without the flag they stop with a usage error (exit 2)
// that names it, and touch neither $CIVNODE_DATA_DIR nor ~/.civnode.
func TestTargetDataDirRequired(t *testing.T) {
	root := t.TempDir()
	envDir, home := filepath.Join(root, "env"), filepath.Join(root, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(root, "node.key")
	for _, args := range [][]string{
		{"restore", filepath.Join(root, "backup")},
		{"import", filepath.Join(root, "bundle.json"), "--key", key},
		{"import", "-", "--key", key, "--data-dir", ""},
	} {
		t.Run(args[0], func(t *testing.T) {
			var stdout, stderr syncBuffer
			m := testMain(nil, &stdout, &stderr)
			m.Getenv = func(name string) string {
				if name == "CIVNODE_DATA_DIR" {
					return envDir
				}
				return ""
			}
			m.HomeDir = func() (string, error) { return home, nil }
			ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
			defer cancel()
			err := m.Run(ctx, args)
			if code := ExitCode(err); code != 2 || !strings.Contains(stderr.String(), "--data-dir is required") {
				t.Fatalf("civnode %s: exit %d, stderr %q; want 2 and a message naming --data-dir", strings.Join(args, " "), code, stderr.String())
			}
			for _, dir := range []string{envDir, filepath.Join(home, ".civnode")} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("civnode %s made %s (stat: %v)", args[0], dir, err)
				}
			}
		})
	}
}
