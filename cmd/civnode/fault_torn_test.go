package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFaultTornTail: a node is SIGKILLed right after its last acknowledged
// write, and copies of its data dir have the newest write-ahead log cut
// short, as a crash in the middle of writing that record would leave it.
// verify --data-dir reports a torn tail with the seq it recovered to and
// exits 0, and serve logs the same warning and starts, serving the recovered
// chain and taking writes. The same log with one byte flipped in the middle
// instead is corruption: verify exits 1 naming the log, serve refuses to start.
func TestFaultTornTail(t *testing.T) {
	dir := t.TempDir()
	p := startProcess(t, dir)
	for i := range 12 {
		if _, err := bootstrapOnce(httpClient, p, fmt.Sprintf("torn-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var st stateBody
	getJSON(t, p.url+"/v1/state", p.token, http.StatusOK, &st)
	did, root, tip := st.Identity.NodeDID, st.Chain.RootHash, st.Chain.Seq
	p.signal(t, syscall.SIGKILL)
	p.wait(t)

	wal, starts := newestWAL(t, dir)
	fi, err := os.Stat(wal)
	if err != nil {
		t.Fatal(err)
	}
	last := starts[len(starts)-1] // the last bootstrap: identity.bootstrapped and profile.updated
	rel, _ := filepath.Rel(dir, wal)
	want := fmt.Sprintf("torn tail: the newest write of the last run was cut short and never acknowledged; recovered to seq %d", tip-2)
	for _, cut := range []int64{1, 17, (fi.Size() - last) / 2, fi.Size() - last - 3} {
		copied := copyDataDir(t, dir)
		if err := os.Truncate(filepath.Join(copied, rel), fi.Size()-cut); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runSplit(t, nil, "verify", "--data-dir", copied)
		if n := requireVerified(t, fmt.Sprintf("verify, %d bytes cut", cut), stdout, code, did, root); n != tip-2 {
			t.Errorf("%d bytes cut: verify counted %d events, want %d", cut, n, tip-2)
		}
		if !strings.Contains(stderr, "level=WARN msg=\""+want) || strings.Contains(stderr, "corrupt") {
			t.Errorf("%d bytes cut: verify's stderr %q, want the torn tail warning %q", cut, stderr, want)
		}
		t.Logf("%d of %d bytes cut: verify exit %d\n%s%s", cut, fi.Size(), code, stderr, stdout)
	}

	copied := copyDataDir(t, dir)
	if err := os.Truncate(filepath.Join(copied, rel), fi.Size()-40); err != nil {
		t.Fatal(err)
	}
	p = startProcess(t, copied)
	if !strings.Contains(p.stderr.String(), want) {
		t.Errorf("serve's log does not report the torn tail:\n%s", p.stderr)
	}
	getJSON(t, p.url+"/v1/health", "", http.StatusOK, nil)
	getJSON(t, p.url+"/v1/state", p.token, http.StatusOK, &st)
	if st.Chain.Seq != tip-2 {
		t.Errorf("serve recovered to seq %d, want %d", st.Chain.Seq, tip-2)
	}
	if _, err := bootstrapOnce(httpClient, p, "torn-11"); err != nil {
		t.Errorf("the dropped bootstrap again: %v", err)
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, p.stderr)
	}
	stdout, stderr, code := runSplit(t, nil, "verify", "--data-dir", copied)
	requireVerified(t, "verify after the restart", stdout, code, did, root)
	if strings.Contains(stderr, "torn") {
		t.Errorf("a second open reported the torn tail again: %s", stderr)
	}

	// One byte flipped inside the first chunk of a record in the middle.
	mid := len(starts) / 2
	for starts[mid]%(32<<10)+11+100 > 32<<10 {
		mid++
	}
	copied = copyDataDir(t, dir)
	at := starts[mid] + 11 + 30
	b, err := os.ReadFile(filepath.Join(copied, rel))
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0x20
	if err := os.WriteFile(filepath.Join(copied, rel), b, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := fmt.Sprintf("corrupt store: cannot read %s: damaged at offset %d, with records written after it (damage, not a torn write)",
		filepath.Join(copied, rel), starts[mid])
	stdout, stderr, code = runSplit(t, nil, "verify", "--data-dir", copied)
	t.Logf("one byte flipped at offset %d: verify exit %d\n%s%s", at, code, stderr, stdout)
	if code != 1 || stdout != "invalid: "+damaged+"\n" || strings.Contains(stderr, "torn") {
		t.Errorf("verify of a damaged log: exit %d, stdout %q, stderr %q; want 1 and %q", code, stdout, stderr, damaged)
	}
	stdout, stderr, code = runSplit(t, nil, "serve", "--data-dir", copied, "--addr", "127.0.0.1:0")
	if code != 1 || stdout != "" || !strings.Contains(stderr, damaged+"; the node will not start on a damaged store") {
		t.Errorf("serve on a damaged log: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
