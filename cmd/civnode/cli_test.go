package main

import (
	"strings"
	"testing"
)

// TestCommandLine covers the exit codes and messages of the command line that
// need no node: usage errors exit 2, failures 1.
func TestCommandLine(t *testing.T) {
	missing := t.TempDir() + "/missing"
	tests := []struct {
		name      string
		args      []string
		stdin     string
		code      int
		stdout    string // prefix
		stderrHas string
	}{
		{name: "no args prints help", args: nil, code: 0, stdout: "civnode runs a node's control plane"},
		{name: "version", args: []string{"version"}, code: 0, stdout: "civnode "},
		{name: "unknown command", args: []string{"sevre"}, code: 2, stderrHas: `did you mean "serve"?`},
		{name: "unknown flag", args: []string{"serve", "--no-such-flag", "x"}, code: 2, stderrHas: "unknown flag: --no-such-flag"},
		{name: "bad log level", args: []string{"--log-level", "loud", "version"}, code: 2, stderrHas: `--log-level "loud"`},
		{name: "verify needs input", args: []string{"verify"}, code: 2, stderrHas: "verify needs a bundle file"},
		{name: "verify both", args: []string{"verify", "x.json", "--data-dir", missing}, code: 2, stderrHas: "not both"},
		{name: "verify missing file", args: []string{"verify", missing}, code: 1, stderrHas: "open bundle"},
		{name: "verify empty object", args: []string{"verify", "-"}, stdin: "{}", code: 1, stdout: "invalid: bad bundle:"},
		{name: "verify not json", args: []string{"verify", "-"}, stdin: "hello", code: 1, stdout: "invalid: bad bundle:"},
		{name: "verify no node", args: []string{"verify", "--data-dir", missing}, code: 1, stderrHas: "no node in"},
		{name: "export no node", args: []string{"export", "--data-dir", missing}, code: 1, stderrHas: "no node in"},
		{name: "replay no node", args: []string{"replay", "--data-dir", missing}, code: 1, stderrHas: "no node in"},
		{name: "export default dir needs home", args: []string{"export"}, code: 1, stderrHas: "set --data-dir or CIVNODE_DATA_DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCLI(t, []byte(tt.stdin), tt.args...)
			if res.code != tt.code || !strings.HasPrefix(res.stdout, tt.stdout) || !strings.Contains(res.stderr, tt.stderrHas) {
				t.Errorf("code %d (want %d)\nstdout %q (want prefix %q)\nstderr %q (want %q)",
					res.code, tt.code, res.stdout, tt.stdout, res.stderr, tt.stderrHas)
			}
		})
	}
}
