package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// configSecretWarning starts the warning serve logs for a config file that
// holds a secret others may read.
const configSecretWarning = "config file holds secrets and is readable by group or others; chmod 600 it"

// TestConfigSecretsReadable runs the real binary on config files: one that
// holds a secret (a mirror token, credentials in the --nats-leaf URL) and
// that group or others may read is used with a warning naming the file and
// the settings, never their values; the same file with mode 0600, or a
// world-readable one without a secret, gets none.
func TestConfigSecretsReadable(t *testing.T) {
	const token, password = "mirror-secret-3f9c1e", "leaf-password-8b2d"
	for _, tc := range []struct {
		name     string
		file     string
		mode     os.FileMode
		settings string // "": no warning
	}{
		{"token world-readable", "mirror-token: " + token + "\n", 0o644, "mirror-token"},
		{"leaf credentials group-readable", "nats-leaf: nats://leaf:" + password + "@127.0.0.1:1\n", 0o640, "nats-leaf"},
		{"token owner-only", "mirror-token: " + token + "\n", 0o600, ""},
		{"no secret world-readable", "rate-limit: 100\nnats-leaf: nats://127.0.0.1:1\n", 0o644, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "civnode.yaml")
			putFile(t, cfg, tc.file)
			if err := os.Chmod(cfg, tc.mode); err != nil {
				t.Fatal(err)
			}
			p := startProcess(t, filepath.Join(dir, "node"), "--config", cfg)
			// Once it has stopped, stderr holds every line it wrote.
			p.signal(t, syscall.SIGTERM)
			p.wait(t)
			stderr := p.stderr.String()
			warned := strings.Contains(stderr, configSecretWarning)
			switch {
			case tc.settings == "" && warned:
				t.Errorf("mode %04o warned of secrets:\n%s", tc.mode, stderr)
			case tc.settings != "" && !warned:
				t.Errorf("mode %04o did not warn of secrets:\n%s", tc.mode, stderr)
			case tc.settings != "" && !strings.Contains(stderr, "path="+cfg) || tc.settings != "" && !strings.Contains(stderr, "settings="+tc.settings):
				t.Errorf("the warning does not name the file and settings=%s:\n%s", tc.settings, stderr)
			}
			if strings.Contains(stderr, token) || strings.Contains(stderr, password) {
				t.Errorf("stderr holds a secret:\n%s", stderr)
			}
		})
	}
}
