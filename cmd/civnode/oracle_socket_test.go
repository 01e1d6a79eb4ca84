package main

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
)

// staleSocket leaves a socket file at path with nobody listening, as a
// killed node does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
}

// TestOracleSocket: a running node serves the oracle on oracle.sock in its
// data dir, mode 0600; a second process uses it without touching the
// database; without it, the CLI says which socket it could not reach; a stale
// socket is no obstacle either way; a clean stop removes it. The exchange
// itself (requests, answers, the decoding rule, the bound of a line) is
// oraclesock's own test.
func TestOracleSocket(t *testing.T) {
	needBinary(t)
	f := newOracleFixture(t, t.TempDir())
	sock := datadir.Dir(f.dir).OracleSocketPath()

	// A killed node's socket: the CLI works on the data dir, and the next
	// node replaces it.
	staleSocket(t, sock)
	runFeedCLI(t, f.dir, nil, 0, "feeds")
	n := startNodeArgs(t, f.dir, "--log-level", "debug")
	fi, err := os.Lstat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("oracle.sock: %v %v, want a socket with mode 0600", fi, err)
	}

	// Another process: it reaches the node through the socket and never opens
	// the database the node holds.
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, civnodeBin, "oracle", "balance", "--agent", "bob", "--json", "--data-dir", f.dir, "--log-level", "debug")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("civnode oracle balance: %v\n%s", err, stderr.String())
	}
	if want := `{"public_id":"bob","agent_did":"` + f.dids["bob"] + `","credit":20}` + "\n"; stdout.String() != want {
		t.Errorf("balance over the socket: %q, want %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "using its oracle socket") || strings.Contains(stderr.String(), "pebble") ||
		strings.Contains(stderr.String(), "opening the data dir") {
		t.Errorf("the second process did not keep to the socket; its log:\n%s", stderr.String())
	}

	// The CLI holds a payload to the socket's I-JSON rule, on the socket as
	// on a stopped node's data dir (below).
	var dup refusal
	runFeedJSON(t, f.dir, 1, &dup, "publish", "dup.feed", "--as", "ada", "--payload", `{"p":1,"p":2}`, "--price", "1")
	if dup.Error.Code != "invalid_field" || dup.Error.Field != "payload" || !strings.Contains(dup.Error.Message, `field "p" appears more than once`) {
		t.Errorf("publish of a payload with a name twice, node running: %+v", dup.Error)
	}

	// Without its socket, a running node cannot be reached: the CLI says so
	// and records nothing.
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	var ref refusal
	res := runFeedJSON(t, f.dir, 1, &ref, "publish", "news", "--as", "ada", "--payload", "1", "--price", "1")
	if !strings.Contains(res.stderr, "data dir in use by a running node") || !strings.Contains(res.stderr, "its oracle socket "+sock+" cannot be reached") ||
		ref.Error.Code != "data_dir_in_use" {
		t.Errorf("without the socket: stdout %q stderr %q", res.stdout, res.stderr)
	}
	n.stop(t)
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("oracle.sock after a clean stop: %v, want it gone", err)
	}
	dup = refusal{}
	runFeedJSON(t, f.dir, 1, &dup, "publish", "dup.feed", "--as", "ada", "--payload", `{"p":1,"p":2}`, "--price", "1")
	if dup.Error.Code != "invalid_field" || dup.Error.Field != "payload" || !strings.Contains(dup.Error.Message, `field "p" appears more than once`) {
		t.Errorf("publish of a payload with a name twice, node stopped: %+v", dup.Error)
	}
	if openTipSeq(t, f.dir) != f.setupTip {
		t.Error("the socket test appended events")
	}
}

// TestOracleCommandLine covers the oracle's usage errors (exit 2) and the
// failures that need no node (exit 1).
func TestOracleCommandLine(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		stderrHas string
	}{
		{"publish needs as", []string{"publish", "f", "--payload", "1", "--price", "1"}, 2, "publish needs --as PUBLIC_ID"},
		{"publish needs payload", []string{"publish", "f", "--as", "ada", "--price", "1"}, 2, "publish needs --payload JSON"},
		{"publish needs price", []string{"publish", "f", "--as", "ada", "--payload", "1"}, 2, "publish needs --price N"},
		{"price is a number", []string{"publish", "f", "--as", "ada", "--payload", "1", "--price", "five"}, 2, `invalid argument "five" for "--price"`},
		{"publish needs a feed", []string{"publish", "--as", "ada", "--payload", "1", "--price", "1"}, 2, "accepts 1 arg"},
		{"subscribe needs max price", []string{"subscribe", "f", "--as", "bob"}, 2, "subscribe needs --max-price N"},
		{"subscribe needs as", []string{"subscribe", "f", "--max-price", "1"}, 2, "subscribe needs --as PUBLIC_ID"},
		{"pull needs as", []string{"pull", "f"}, 2, "pull needs --as PUBLIC_ID"},
		{"pull one feed", []string{"pull", "f", "g", "--as", "bob"}, 2, "accepts 1 arg"},
		{"balance takes no args", []string{"balance", "bob"}, 2, "unknown command"},
		{"balance agent empty", []string{"balance", "--agent", ""}, 2, "--agent needs a PUBLIC_ID"},
		{"unknown subcommand", []string{"pubish"}, 2, "unknown command"},
		{"feeds no node", []string{"feeds"}, 1, "no node in"},
		{"payload file missing", []string{"publish", "f", "--as", "ada", "--payload", "@" + missing, "--price", "1"}, 1, "read --payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, nil, append(append([]string{"oracle"}, tc.args...), "--data-dir", missing)...)
			if res.code != tc.code || !strings.Contains(res.stderr, tc.stderrHas) || res.stdout != "" {
				t.Errorf("code %d (want %d), stdout %q, stderr %q (want %q)", res.code, tc.code, res.stdout, res.stderr, tc.stderrHas)
			}
		})
	}
	res := runCLI(t, nil, "oracle", "feeds", "--json", "--data-dir", missing)
	var ref refusal
	if err := decodeStrict([]byte(res.stdout), &ref); res.code != 1 || err != nil || ref.Error.Kind != "failed" || !strings.Contains(ref.Error.Message, "no node in") {
		t.Errorf("feeds --json without a node: code %d stdout %q (%v)", res.code, res.stdout, err)
	}
}
