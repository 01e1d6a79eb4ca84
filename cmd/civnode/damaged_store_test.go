package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/cmd/civnode/internal/localnode"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/eventlogtest"
)

// damagedDataDir makes the data dir of a stopped node whose chain holds n
// events, appended through the node's core so that its read models are
// current, moves them into sstables, and flips one byte of event at's payload
// where an sstable holds it, as a failing disk would. It returns the dir and
// the damaged file.
func damagedDataDir(t *testing.T, n, at uint64) (dir, sst string) {
	t.Helper()
	dir = t.TempDir()
	startNode(t, dir).stop(t)
	node, err := localnode.OpenExisting(context.Background(), datadir.Dir(dir), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	// Chained hashes as padding: Snappy finds no repeats in them, so the stored
	// bytes appear literally in the file.
	h := sha256.Sum256([]byte("pad"))
	var drafts []eventlog.Draft
	var pad string
	for seq := node.Log.Tip().Seq + 1; seq <= n; seq++ {
		var b strings.Builder
		for range 8 {
			h = sha256.Sum256(h[:])
			b.WriteString(hex.EncodeToString(h[:]))
		}
		if seq == at {
			pad = b.String()
		}
		drafts = append(drafts, eventlog.Draft{Type: "test.padded", Payload: map[string]any{"seq": seq, "pad": b.String()}})
		if len(drafts) == 500 || seq == n {
			if _, err := node.Log.Append(context.Background(), drafts...); err != nil {
				t.Fatal(err)
			}
			drafts = drafts[:0]
		}
	}
	if err := node.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(filepath.Join(dir, "db"), &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	sst, err = eventlogtest.FlipInSSTable(filepath.Join(dir, "db"), pad)
	if err != nil {
		t.Fatal(err)
	}
	return dir, sst
}

// corruptRange matches the seq range a corruption message names.
var corruptRange = regexp.MustCompile(`corrupt store at seq ([0-9]+)(?:\.\.([0-9]+))?: cannot read (\S+\.sst): `)

// requireCorruptMessage requires that s names a seq range holding seq and the
// damaged file, and shows no Go panic.
func requireCorruptMessage(t *testing.T, what, s string, seq uint64, sst string) {
	t.Helper()
	if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
		t.Fatalf("%s panicked:\n%s", what, s)
	}
	m := corruptRange.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s: no corrupt store message in:\n%s", what, s)
	}
	first, _ := strconv.ParseUint(m[1], 10, 64)
	last := first
	if m[2] != "" {
		last, _ = strconv.ParseUint(m[2], 10, 64)
	}
	if first > seq || last < seq {
		t.Errorf("%s: range %d..%d does not hold the damaged event %d", what, first, last, seq)
	}
	if m[3] != sst {
		t.Errorf("%s names %s, the damaged file is %s", what, m[3], sst)
	}
}

// runSplit runs the binary with stdout to out (a buffer when nil) and returns
// stdout, stderr and the exit code.
func runSplit(t *testing.T, out *os.File, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	needBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, civnodeBin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if out != nil {
		cmd.Stdout = out
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run civnode %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// TestDamagedStoreAtTheTip flips a byte among the newest events, which every
// command reads when it opens the chain: verify, serve, replay and export each
// exit 1 without a panic, naming the file and the seqs they could not read,
// and export writes nothing.
func TestDamagedStoreAtTheTip(t *testing.T) {
	dir, sst := damagedDataDir(t, 600, 500)
	for _, args := range [][]string{
		{"verify", "--data-dir", dir},
		{"replay", "--data-dir", dir},
		{"export", "--data-dir", dir},
		{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0"},
	} {
		stdout, stderr, code := runSplit(t, nil, args...)
		if code != 1 {
			t.Errorf("%s: exit %d, want 1\nstdout %q\nstderr %s", args[0], code, stdout, stderr)
		}
		switch args[0] {
		case "verify", "replay":
			if !strings.HasPrefix(stdout, "invalid: corrupt store at seq ") {
				t.Errorf("%s: stdout %q, want the invalid: line", args[0], stdout)
			}
			requireCorruptMessage(t, args[0], stdout+stderr, 500, sst)
		default:
			if stdout != "" {
				t.Errorf("%s: stdout %.200q, want nothing", args[0], stdout)
			}
			requireCorruptMessage(t, args[0], stderr, 500, sst)
		}
	}
}

// TestDamagedStoreDeep flips a byte in an event older than the tail the node
// checks when it opens. verify --data-dir and replay walk the whole chain and
// report it; export stops there, and its output, to a file or a pipe, is not a
// bundle; serve starts, and the first request that reads the damage gets 500,
// after which health is 503 and writes are refused.
func TestDamagedStoreDeep(t *testing.T) {
	dir, sst := damagedDataDir(t, 1500, 100)

	for _, cmd := range []string{"verify", "replay"} {
		stdout, stderr, code := runSplit(t, nil, cmd, "--data-dir", dir)
		if code != 1 || !strings.HasPrefix(stdout, "invalid: corrupt store at seq ") {
			t.Errorf("%s: exit %d, stdout %q, want 1 and the invalid: line\nstderr %s", cmd, code, stdout, stderr)
		}
		requireCorruptMessage(t, cmd, stdout+stderr, 100, sst)
	}

	// To a file, as in civnode export > bundle.json: the file is left as it was.
	out, err := os.Create(filepath.Join(t.TempDir(), "bundle.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	_, stderr, code := runSplit(t, out, "export", "--data-dir", dir)
	if code != 1 {
		t.Errorf("export to a file: exit %d, want 1\nstderr %s", code, stderr)
	}
	requireCorruptMessage(t, "export to a file", stderr, 100, sst)
	if fi, err := out.Stat(); err != nil || fi.Size() != 0 {
		t.Errorf("export to a file left %v bytes (%v), want none", fi.Size(), err)
	}
	// To a pipe, as in civnode export | civnode verify -: what was written
	// before the damage does not parse, and verify rejects it.
	stdout, stderr, code := runSplit(t, nil, "export", "--data-dir", dir)
	if code != 1 {
		t.Errorf("export to a pipe: exit %d, want 1", code)
	}
	requireCorruptMessage(t, "export to a pipe", stderr, 100, sst)
	if json.Valid([]byte(stdout)) {
		t.Error("the output of a failed export to a pipe is valid JSON")
	}
	if vout, code := runBinaryStdin(t, []byte(stdout), "verify", "-"); code != 1 || !strings.HasPrefix(vout, "invalid: ") {
		t.Errorf("verify - of a failed export: exit %d, output %q", code, vout)
	}

	p := startProcess(t, dir)
	getJSON(t, p.url+"/v1/health", "", http.StatusOK, nil)
	getJSON(t, p.url+"/v1/events?limit=1000", p.token, http.StatusInternalServerError, nil)
	var health map[string]string
	getJSON(t, p.url+"/v1/health", "", http.StatusServiceUnavailable, &health)
	if health["status"] == "ok" {
		t.Errorf("health body %v after a corrupt read", health)
	}
	body := fmt.Sprintf(`{"display_name":"After","public_id":"after-damage","faction":"order"}`)
	req, err := http.NewRequest(http.MethodPost, p.url+"/v1/civilization/bootstrap-identity", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a write after a corrupt read: status %d, want 503", resp.StatusCode)
	}
	p.signal(t, syscall.SIGTERM)
	p.wait(t)
	requireCorruptMessage(t, "serve's log", strings.ReplaceAll(p.stderr.String(), `\"`, `"`), 100, sst)
}
