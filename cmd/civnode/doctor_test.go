package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/eventlog"
)

// reportJSON is the shape of doctor --json.
type reportJSON struct {
	DataDir     string `json:"data_dir"`
	Addr        string `json:"addr"`
	RegistryURL string `json:"registry_url"`
	Status      string `json:"status"`
	Failed      int    `json:"failed"`
	Warnings    int    `json:"warnings"`
	Checks      []struct {
		Name   string  `json:"name"`
		Status string  `json:"status"`
		Detail string  `json:"detail"`
		Fix    *string `json:"fix"`
	} `json:"checks"`
}

// reportChecks are the checks of a data dir with no payment account, in
// the report's order.
var reportChecks = []string{"data_dir", "db", "node_key", "control_token", "registry_credential", "wallets",
	"disk", "chain", "read_models", "node", "port", "registry"}

// fakeRegistry answers GET /v1/agents with an empty list, and requires the
// request to be signed by the node key of dir, as the node signs its own.
func fakeRegistry(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	key, err := datadir.LoadNodeKey(filepath.Join(dir, "node.key"), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sig, err := base64.StdEncoding.DecodeString(r.Header.Get("X-Node-Signature"))
		msg := servicenet.SigningBytes(r.Method, r.URL.EscapedPath(), r.Header.Get("X-Node-Timestamp"), nil)
		switch {
		case r.Method != http.MethodGet || r.URL.Path != "/v1/agents":
			t.Errorf("registry got %s %s, want GET /v1/agents", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		case r.Header.Get("X-Node-DID") != eventlog.DIDKey(pub) || err != nil || !ed25519.Verify(pub, msg, sig):
			t.Errorf("registry request not signed by the node: headers %v", r.Header)
			w.WriteHeader(http.StatusUnauthorized)
			return
		case r.Header.Get("Authorization") != "":
			t.Errorf("registry request carries a credential, and the data dir has none")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"agents":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// stoppedNode makes the data dir of a node that ran once and stopped.
func stoppedNode(t *testing.T) string {
	t.Helper()
	dir := newDataDir(t)
	startNode(t, dir).stop(t)
	return dir
}

// newDataDir is an empty dir for a node, with the mode serve gives the data
// dir it creates (t.TempDir's follows the umask).
func newDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runDoctor runs doctor on dir with a fake registry and a free port, plus
// extra arguments (later flags win).
func runDoctor(t *testing.T, dir string, extra ...string) cliResult {
	t.Helper()
	args := append([]string{"doctor", "--data-dir", dir, "--addr", freeAddr(t), "--registry-url", fakeRegistry(t, dir).URL}, extra...)
	res := runCLI(t, nil, args...)
	requireNoSecret(t, dir, res.stdout+res.stderr)
	return res
}

// requireNoSecret fails if out holds the owner token or the node key.
func requireNoSecret(t *testing.T, dir, out string) {
	t.Helper()
	for _, name := range []string{"control.token", "node.key"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(out, line) {
				t.Fatalf("doctor printed a line of %s:\n%s", name, out)
			}
		}
	}
}

// reportLine finds the report line of check name and returns its status and
// the fix under it, if any.
func reportLine(t *testing.T, stdout, name string) (status, line, fix string) {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	re := regexp.MustCompile(`^(ok|warn|FAIL|skip) +` + regexp.QuoteMeta(name) + ` +(.*)$`)
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		if i+1 < len(lines) {
			if f, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "fix: "); ok {
				fix = f
			}
		}
		return m[1], m[2], fix
	}
	t.Fatalf("no %s line in:\n%s", name, stdout)
	return "", "", ""
}

func TestDoctorHealthy(t *testing.T) {
	dir := stoppedNode(t)
	res := runDoctor(t, dir)
	if res.code != 0 || !strings.HasSuffix(res.stdout, "every check passed\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	for _, name := range reportChecks {
		if status, line, _ := reportLine(t, res.stdout, name); status != "ok" {
			t.Errorf("%s: %s %s, want ok", name, status, line)
		}
	}
	if _, line, _ := reportLine(t, res.stdout, "chain"); !strings.Contains(line, "every event verifies, genesis to tip (1 event") {
		t.Errorf("chain line %q", line)
	}
	if _, line, _ := reportLine(t, res.stdout, "registry"); !strings.Contains(line, "answered 200 with 0 agents in") {
		t.Errorf("registry line %q", line)
	}
	if _, line, _ := reportLine(t, res.stdout, "node"); line != "not running; the store is free" {
		t.Errorf("node line %q", line)
	}
}

// TestDoctorFileModes loosens one file's mode at a time: access by group or
// others is a failure naming the file and the chmod that fixes it; an
// owner-only mode other than the expected one is a warning.
func TestDoctorFileModes(t *testing.T) {
	cases := []struct {
		file   string // in the data dir; "" is the dir itself
		mode   os.FileMode
		check  string
		status string
		fix    string // the chmod, before the path
		says   string // what the line says is wrong, after the mode
	}{
		{"control.token", 0o644, "control_token", "FAIL", "chmod 600", "it is readable by group or others; a secret must be yours alone (mode 0600)"},
		{"control.token", 0o400, "control_token", "warn", "chmod 600", "not 0600"},
		{"node.key", 0o640, "node_key", "FAIL", "chmod 600", "it is readable by group or others"},
		{"node.key", 0o644, "node_key", "FAIL", "chmod 600", "it is readable by group or others; a secret must be yours alone (mode 0600); it is the Ed25519 key of did:key:"},
		{"node.key", 0o620, "node_key", "FAIL", "chmod 600", "it is writable by group or others"},
		{"registry.credential", 0o604, "registry_credential", "FAIL", "chmod 600", "it is readable by group or others"},
		{"wallets/ops.key", 0o644, "wallets", "FAIL", "chmod 600", "it is readable by group or others"},
		{"wallets/ops.key", 0o666, "wallets", "FAIL", "chmod 600", "it is readable and writable by group or others"},
		{"", 0o755, "data_dir", "warn", "chmod 700", "group or others may read"},
		{"", 0o775, "data_dir", "FAIL", "chmod 700", "group or others may write"},
	}
	for _, tc := range cases {
		t.Run(tc.file+"/"+tc.mode.String(), func(t *testing.T) {
			dir := stoppedNode(t)
			if err := os.WriteFile(filepath.Join(dir, "registry.credential"), []byte("cred-0123456789abcdef\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if res := runCLI(t, nil, "wallet", "create", "ops", "--data-dir", dir); res.code != 0 {
				t.Fatalf("wallet create: %d %s", res.code, res.stderr)
			}
			path := filepath.Join(dir, tc.file)
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			// The fake registry checks that no credential is sent; this dir has one.
			args := []string{"doctor", "--data-dir", dir, "--addr", freeAddr(t), "--registry-url", "http://" + freeAddr(t)}
			res := runCLI(t, nil, args...)
			requireNoSecret(t, dir, res.stdout+res.stderr)
			if strings.Contains(res.stdout+res.stderr, "cred-0123456789abcdef") {
				t.Fatalf("doctor printed the registry credential:\n%s", res.stdout)
			}
			status, line, fix := reportLine(t, res.stdout, tc.check)
			wantLine := fmt.Sprintf("%s has mode %04o", path, tc.mode)
			if status != tc.status || !strings.Contains(line, wantLine) || !strings.Contains(line, tc.says) || fix != tc.fix+" "+path {
				t.Errorf("%s: %s %q, fix %q; want %s naming %q and saying %q, fix %q", tc.check, status, line, fix, tc.status, wantLine, tc.says, tc.fix+" "+path)
			}
			// A key that is too open is still a key that reads: the checks
			// that need it run, and nothing says it cannot be read.
			if strings.Contains(res.stdout, "cannot be read") {
				t.Errorf("doctor says a file cannot be read:\n%s", res.stdout)
			}
			if status, line, _ := reportLine(t, res.stdout, "chain"); status != "ok" {
				t.Errorf("chain: %s %q, want ok", status, line)
			}
			wantCode := 0
			if tc.status == "FAIL" {
				wantCode = 1
			}
			if res.code != wantCode {
				t.Errorf("exit %d, want %d:\n%s", res.code, wantCode, res.stdout)
			}
		})
	}
}

// appendManyNotes appends notes n = from … from+count-1 to a stopped node's
// chain in one call, so that a long chain costs one fsync per group.
func appendManyNotes(t *testing.T, dir string, from, count int) {
	t.Helper()
	l := openTestLog(t, dir)
	drafts := make([]eventlog.Draft, 0, count)
	for i := from; i < from+count; i++ {
		drafts = append(drafts, eventlog.Draft{Type: "test.note", Payload: map[string]int{"n": i}})
	}
	if _, err := l.Append(context.Background(), drafts...); err != nil {
		l.Close()
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorDamagedNewestEvent: an event among the newest, which the log
// checks when it opens, names its seq and what to do.
func TestDoctorDamagedNewestEvent(t *testing.T) {
	dir := stoppedNode(t)
	appendNotes(t, dir, 1, 2) // seq 2 {"n":1}, seq 3 {"n":2}
	corruptStoredEvent(t, dir, 3, `"n":2`, `"n":9`)
	res := runDoctor(t, dir)
	status, line, fix := reportLine(t, res.stdout, "chain")
	if res.code != 1 || status != "FAIL" || !strings.Contains(line, "corrupt store at seq 3: id does not match") || !strings.Contains(fix, "restore the data dir from a backup") {
		t.Fatalf("exit %d, chain %s %q fix %q:\n%s", res.code, status, line, fix, res.stdout)
	}
}

// TestDoctorChainFromCheckpoint: verify --data-dir records where it ended;
// doctor then checks from there, and finds damage that the log's own check
// at open does not reach, and an event at the checkpoint that changed.
func TestDoctorChainFromCheckpoint(t *testing.T) {
	dir := stoppedNode(t)
	appendNotes(t, dir, 1, 4) // seq 2..5
	res := runCLI(t, nil, "verify", "--data-dir", dir)
	if res.code != 0 || !strings.HasPrefix(res.stdout, "ok: 5 events") {
		t.Fatalf("verify: exit %d %q %q", res.code, res.stdout, res.stderr)
	}
	// 1100 events after the checkpoint: seq 50 is older than the newest
	// 1024 that opening the log checks.
	appendManyNotes(t, dir, 5, 1100) // seq 6..1105, {"n":5}..{"n":1104}
	res = runDoctor(t, dir)
	if status, line, _ := reportLine(t, res.stdout, "chain"); res.code != 0 || status != "ok" ||
		!strings.HasPrefix(line, "sound: seq 5 is unchanged since the full verify of ") || !strings.Contains(line, ", and the 1100 events after it and the genesis event verify (") {
		t.Fatalf("exit %d, chain %s %q", res.code, status, line)
	}

	damaged := copyDataDir(t, dir)
	corruptStoredEvent(t, damaged, 50, `"n":49`, `"n":94`)
	res = runDoctor(t, damaged)
	if status, line, _ := reportLine(t, res.stdout, "chain"); res.code != 1 || status != "FAIL" ||
		!strings.Contains(line, "broken chain at seq 50: id does not match the event's content") {
		t.Fatalf("damage after the checkpoint: exit %d, chain %s %q:\n%s", res.code, status, line, res.stdout)
	}

	atCheckpoint := copyDataDir(t, dir)
	corruptStoredEvent(t, atCheckpoint, 5, `"n":4`, `"n":7`)
	res = runDoctor(t, atCheckpoint)
	if status, line, _ := reportLine(t, res.stdout, "chain"); res.code != 1 || status != "FAIL" || !strings.Contains(line, "broken chain at seq 5") {
		t.Fatalf("damage at the checkpoint: exit %d, chain %s %q:\n%s", res.code, status, line, res.stdout)
	}
}

// TestDoctorChainWithoutCheckpoint: without a recorded full verify, doctor
// checks the newest 4096 events, which reach further back than the log's
// check at open, and says that the older ones were not read.
func TestDoctorChainWithoutCheckpoint(t *testing.T) {
	dir := stoppedNode(t)
	appendManyNotes(t, dir, 1, 4199) // seq 2..4200, {"n":1}..{"n":4199}
	res := runDoctor(t, dir)
	status, line, fix := reportLine(t, res.stdout, "chain")
	if res.code != 0 || status != "warn" || !strings.Contains(line, "the genesis event and the newest 4096 events (seq 105..4200) verify") ||
		fix != "with the node stopped, run civnode verify --data-dir "+dir+": it reads every event, and doctor starts from where it ended next time" {
		t.Fatalf("exit %d, chain %s %q fix %q", res.code, status, line, fix)
	}
	corruptStoredEvent(t, dir, 200, `"n":199`, `"n":991`)
	res = runDoctor(t, dir)
	if status, line, _ := reportLine(t, res.stdout, "chain"); res.code != 1 || status != "FAIL" || !strings.Contains(line, "broken chain at seq 200") {
		t.Fatalf("damage in the window: exit %d, chain %s %q", res.code, status, line)
	}
}

// TestDoctorPortTaken: --addr held by a process that is not the node.
func TestDoctorPortTaken(t *testing.T) {
	dir := stoppedNode(t)
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	addr := strings.TrimPrefix(other.URL, "http://")
	res := runDoctor(t, dir, "--addr", addr)
	status, line, fix := reportLine(t, res.stdout, "port")
	if res.code != 1 || status != "FAIL" || !strings.HasPrefix(line, addr+" is held by a process that is not this data dir's node") || !strings.Contains(fix, "lsof") {
		t.Fatalf("exit %d, port %s %q fix %q", res.code, status, line, fix)
	}
}

// TestDoctorRunningNode runs the real binary as the node: doctor asks it
// instead of opening its store, and finds it at --addr.
func TestDoctorRunningNode(t *testing.T) {
	dir := newDataDir(t)
	p := startProcess(t, dir)
	addr := strings.TrimPrefix(p.url, "http://")
	res := runDoctor(t, dir, "--addr", addr)
	if res.code != 0 || !strings.HasSuffix(res.stdout, "every check passed\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if _, line, _ := reportLine(t, res.stdout, "port"); !strings.HasPrefix(line, addr+" is served by this node: it proved it holds node.key") {
		t.Errorf("port line %q", line)
	}
	if _, line, _ := reportLine(t, res.stdout, "node"); !strings.HasPrefix(line, "running, reached at "+filepath.Join(dir, "control.sock")+": healthy") {
		t.Errorf("node line %q", line)
	}
	if _, line, _ := reportLine(t, res.stdout, "chain"); !strings.HasPrefix(line, "checked by the running node when it started") || !strings.Contains(line, "tip seq 1 ") {
		t.Errorf("chain line %q", line)
	}
	if status, _, _ := reportLine(t, res.stdout, "read_models"); status != "skip" {
		t.Errorf("read_models %s, want skip", status)
	}

	// The token file no longer holds the token the node started with.
	if err := os.WriteFile(filepath.Join(dir, "control.token"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = runDoctor(t, dir, "--addr", addr)
	if status, line, _ := reportLine(t, res.stdout, "node"); res.code != 1 || status != "FAIL" || !strings.Contains(line, "refuses the owner token") {
		t.Errorf("changed token: exit %d, node %s %q", res.code, status, line)
	}
}

func TestDoctorRegistryUnreachable(t *testing.T) {
	dir := stoppedNode(t)
	url := "http://" + freeAddr(t)
	res := runDoctor(t, dir, "--registry-url", url)
	status, line, fix := reportLine(t, res.stdout, "registry")
	if res.code != 0 || status != "warn" || !strings.HasPrefix(line, "GET "+url+"/v1/agents: no answer (") ||
		!strings.Contains(line, "connection refused") || fix == "" {
		t.Fatalf("exit %d, registry %s %q fix %q", res.code, status, line, fix)
	}
	if !strings.HasSuffix(res.stdout, "no check failed, 1 warning: see above\n") {
		t.Errorf("summary of:\n%s", res.stdout)
	}
}

func TestDoctorJSON(t *testing.T) {
	dir := stoppedNode(t)
	addr := freeAddr(t)
	reg := fakeRegistry(t, dir)
	res := runCLI(t, nil, "doctor", "--json", "--data-dir", dir, "--addr", addr, "--registry-url", reg.URL)
	var rep reportJSON
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil || dec.More() {
		t.Fatalf("stdout is not one report object (%v):\n%s", err, res.stdout)
	}
	if res.code != 0 || rep.DataDir != dir || rep.Addr != addr || rep.RegistryURL != reg.URL || rep.Status != "ok" || rep.Failed != 0 || rep.Warnings != 0 {
		t.Fatalf("exit %d, report %+v", res.code, rep)
	}
	var names []string
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		if c.Status != "ok" || c.Detail == "" || c.Fix != nil {
			t.Errorf("check %+v, want ok with a detail and no fix", c)
		}
	}
	if strings.Join(names, ",") != strings.Join(reportChecks, ",") {
		t.Errorf("checks %v, want %v", names, reportChecks)
	}

	token := filepath.Join(dir, "control.token")
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	res = runCLI(t, nil, "doctor", "--json", "--data-dir", dir, "--addr", addr, "--registry-url", "http://"+freeAddr(t))
	rep = reportJSON{}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, res.stdout)
	}
	if res.code != 1 || rep.Status != "fail" || rep.Failed != 1 || rep.Warnings != 1 || res.stderr != "" {
		t.Fatalf("exit %d, report %+v, stderr %q", res.code, rep, res.stderr)
	}
	for _, c := range rep.Checks {
		if c.Name == "control_token" && (c.Status != "fail" || c.Fix == nil || *c.Fix != "chmod 600 "+token) {
			t.Errorf("control_token check %+v", c)
		}
	}
}

func TestDoctorCommandLine(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name      string
		args      []string
		code      int
		stdoutHas string
		stderrHas string
	}{
		{"bad addr", []string{"doctor", "--data-dir", missing, "--addr", "nowhere"}, 2, "", `--addr "nowhere"`},
		{"ftp addr", []string{"doctor", "--data-dir", missing, "--addr", "ftp://127.0.0.1:7777"}, 2, "", `--addr "ftp://127.0.0.1:7777"`},
		{"bad registry", []string{"doctor", "--data-dir", missing, "--registry-url", "ftp://x"}, 2, "", "--registry-url"},
		{"an argument", []string{"doctor", "now"}, 2, "", "unknown command"},
		{"no data dir", []string{"doctor", "--data-dir", missing, "--addr", "127.0.0.1:0", "--registry-url", "http://" + freeAddr(t)}, 1,
			"FAIL  data_dir", "does not exist"},
		{"default dir needs home", []string{"doctor"}, 1, "", "set --data-dir or CIVNODE_DATA_DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCLI(t, nil, tt.args...)
			if res.code != tt.code || !strings.Contains(res.stdout, tt.stdoutHas) || !strings.Contains(res.stderr+res.stdout, tt.stderrHas) {
				t.Errorf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", res.code, tt.code, res.stdout, tt.stdoutHas, res.stderr, tt.stderrHas)
			}
		})
	}
}

// runDoctorEnv runs doctor with env as the whole environment, read as serve
// reads it (a variable set to "" counts), and parses its --json report.
func runDoctorEnv(t *testing.T, env map[string]string, args ...string) (cliResult, reportJSON) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	var stdout, stderr syncBuffer
	m := testMain(nil, &stdout, &stderr)
	m.Getenv = func(name string) string { return env[name] }
	m.LookupEnv = func(name string) (string, bool) { v, ok := env[name]; return v, ok }
	err := m.Run(ctx, append([]string{"doctor", "--json"}, args...))
	res := cliResult{stdout: stdout.String(), stderr: stderr.String(), code: ExitCode(err), err: err}
	var rep reportJSON
	if res.code != 2 {
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatalf("doctor %v: exit %d, stdout %q is not a report: %v\nstderr:\n%s", args, res.code, res.stdout, err, res.stderr)
		}
	}
	return res, rep
}

// TestDoctorReadsServeSettings: doctor checks the node serve would run, from
// the same sources: --config (or $CIVNODE_CONFIG), the CIVNODE_* variables,
// and doctor's own flags over both. A node whose registry is off there, by
// the file or by an empty variable, gets no registry warning.
func TestDoctorReadsServeSettings(t *testing.T) {
	dir := stoppedNode(t)
	reg := fakeRegistry(t, dir).URL
	addr := freeAddr(t)
	conf := filepath.Join(t.TempDir(), "civnode.yaml")
	// Settings doctor has no flag of its own for are serve's, and welcome.
	if err := os.WriteFile(conf, []byte("data-dir: "+dir+"\naddr: "+addr+"\nregistry-url: \"\"\nrate-limit: 20000\nlog-format: json\nnats-listen: 127.0.0.1:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The shipped unit: its config file, and the data dir from the environment.
	shipped, err := filepath.Abs("../../docs/civnode.yaml")
	if err != nil {
		t.Fatal(err)
	}
	off := `not configured (--registry-url ""): the registry proxy is off, its routes answer 503 registry_not_configured`
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		addr     string
		registry string
	}{
		{"config file", nil, []string{"--config", conf}, addr, ""},
		{"CIVNODE_CONFIG", map[string]string{"CIVNODE_CONFIG": conf}, nil, addr, ""},
		{"variables", map[string]string{"CIVNODE_DATA_DIR": dir, "CIVNODE_ADDR": addr, "CIVNODE_REGISTRY_URL": ""}, nil, addr, ""},
		{"a variable over the file", map[string]string{"CIVNODE_REGISTRY_URL": reg}, []string{"--config", conf}, addr, reg},
		{"a flag over a variable", map[string]string{"CIVNODE_DATA_DIR": dir, "CIVNODE_ADDR": addr, "CIVNODE_REGISTRY_URL": reg},
			[]string{"--registry-url", ""}, addr, ""},
		{"the shipped unit", map[string]string{"CIVNODE_DATA_DIR": dir, "CIVNODE_REGISTRY_URL": ""}, []string{"--config", shipped, "--addr", addr}, addr, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, rep := runDoctorEnv(t, tt.env, tt.args...)
			requireNoSecret(t, dir, res.stdout+res.stderr)
			if res.code != 0 || rep.Status != "ok" || rep.Warnings != 0 {
				t.Errorf("exit %d, status %s, %d warnings; want 0, ok, none\nstdout %s\nstderr %s", res.code, rep.Status, rep.Warnings, res.stdout, res.stderr)
			}
			if rep.DataDir != dir || rep.Addr != tt.addr || rep.RegistryURL != tt.registry {
				t.Errorf("report for data dir %q, addr %q, registry %q; want %q, %q, %q", rep.DataDir, rep.Addr, rep.RegistryURL, dir, tt.addr, tt.registry)
			}
			for _, c := range rep.Checks {
				if c.Name == "registry" && tt.registry == "" && (c.Status != "ok" || c.Detail != off) {
					t.Errorf("registry check %s %q; want ok %q", c.Status, c.Detail, off)
				}
			}
		})
	}
	// serve's sources refuse what serve refuses, with serve's usage error.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("data-dir: "+dir+"\nregistry-urll: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, _ := runDoctorEnv(t, nil, "--config", bad); res.code != 2 || !strings.Contains(res.stderr, `unknown setting "registry-urll"`) {
		t.Errorf("a mistyped key: exit %d, stderr %q; want 2 naming it", res.code, res.stderr)
	}
	if res, _ := runDoctorEnv(t, map[string]string{"CIVNODE_DATA_DIR": dir, "CIVNODE_REGISTRY_URL": "ftp://x"}); res.code != 2 || !strings.Contains(res.stderr, "--registry-url") {
		t.Errorf("CIVNODE_REGISTRY_URL=ftp://x: exit %d, stderr %q; want 2 naming --registry-url", res.code, res.stderr)
	}
}
