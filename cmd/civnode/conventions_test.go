package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestVersion: --version and version print the same line; version --json
// prints the build information as one object.
func TestVersion(t *testing.T) {
	flag := runCLI(t, nil, "--version")
	cmd := runCLI(t, nil, "version")
	if flag.code != 0 || cmd.code != 0 || flag.stdout != cmd.stdout || !strings.HasPrefix(cmd.stdout, "civnode ") ||
		!strings.Contains(cmd.stdout, runtime.Version()) {
		t.Fatalf("--version %d %q, version %d %q", flag.code, flag.stdout, cmd.code, cmd.stdout)
	}
	res := runCLI(t, nil, "version", "--json")
	var got map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != 0 {
		t.Fatalf("version --json: %d %q: %v", res.code, res.stdout, err)
	}
	for _, k := range []string{"version", "commit", "go_version", "build_time", "modified", "platform"} {
		if _, ok := got[k]; !ok {
			t.Errorf("version --json has no %q: %s", k, res.stdout)
		}
	}
	if got["go_version"] != runtime.Version() {
		t.Errorf("go_version %v, want %s", got["go_version"], runtime.Version())
	}
}

// TestVersionLinkTimeOverride: the -ldflags -X variables win over what the
// toolchain recorded.
func TestVersionLinkTimeOverride(t *testing.T) {
	defer func(v, c, b string) { version, commit, buildTime = v, c, b }(version, commit, buildTime)
	version, commit, buildTime = "v9.8.7", "0123456789abcdef0123", "2030-01-02T03:04:05Z"
	b := readBuildInfo()
	if b.Version != "v9.8.7" || b.Commit != "0123456789abcdef0123" || b.BuildTime != "2030-01-02T03:04:05Z" {
		t.Fatalf("build info %+v", b)
	}
	if s := b.String(); !strings.HasPrefix(s, "civnode v9.8.7 (commit 0123456789ab") {
		t.Errorf("version line %q", s)
	}
}

// TestUsageErrorNamesTheHelp: a usage error points at the help of the
// command that was misused, on its own line after the error.
func TestUsageErrorNamesTheHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		help string
	}{
		{[]string{"token", "create", "--no-such-flag"}, "Run 'civnode token create --help' for usage.\n"},
		{[]string{"serve", "extra"}, "Run 'civnode serve --help' for usage.\n"},
		{[]string{"sevre"}, "Run 'civnode --help' for usage.\n"},
		{[]string{"--log-format", "xml", "version"}, "Run 'civnode version --help' for usage.\n"},
	} {
		res := runCLI(t, nil, tc.args...)
		lines := strings.SplitAfter(res.stderr, "\n")
		if res.code != 2 || len(lines) != 3 || !strings.HasPrefix(lines[0], "civnode: ") || lines[1] != tc.help {
			t.Errorf("%v: code %d, stderr %q; want a usage error then %q", tc.args, res.code, res.stderr, tc.help)
		}
	}
}

// TestCompletionAndMan: cobra's completion scripts, and man pages generated
// from the command tree.
func TestCompletionAndMan(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__civnode", "zsh": "#compdef civnode", "fish": "complete -c civnode"} {
		res := runCLI(t, nil, "completion", shell)
		if res.code != 0 || !strings.Contains(res.stdout, want) {
			t.Errorf("completion %s: code %d, %d bytes without %q; stderr %q", shell, res.code, len(res.stdout), want, res.stderr)
		}
	}
	dir := filepath.Join(t.TempDir(), "man")
	if res := runCLI(t, nil, "man", dir); res.code != 0 {
		t.Fatalf("man: %d %s", res.code, res.stderr)
	}
	for _, page := range []string{"civnode.1", "civnode-serve.1", "civnode-token-create.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), ".nh") || !strings.Contains(string(b), `.TH "CIVNODE"`) {
			t.Errorf("%s is not a man page: %.200q", page, b)
		}
	}
	serve, _ := os.ReadFile(filepath.Join(dir, "civnode-serve.1"))
	if !strings.Contains(string(serve), "rate-limit") {
		t.Error("civnode-serve.1 does not list serve's flags")
	}
	again := filepath.Join(t.TempDir(), "man")
	runCLI(t, nil, "man", again)
	if b, _ := os.ReadFile(filepath.Join(again, "civnode-serve.1")); string(b) != string(serve) {
		t.Error("two runs wrote different pages")
	}
}

// serveFlags parses args as serve's command line, applies env as the
// environment and the config file it names, and returns serve's flags.
func serveFlags(t *testing.T, env map[string]string, args ...string) (*pflag.FlagSet, error) {
	t.Helper()
	m := testMain(nil, nil, nil)
	m.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	serve, _, err := m.newRootCommand().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return serve.Flags(), m.applyServeSources(serve.Flags())
}

// TestServeSettingsPrecedence: a flag wins over its CIVNODE_* variable, which
// wins over the config file, which wins over the default; an empty variable
// or an empty string in the file counts.
func TestServeSettingsPrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "civnode.yaml")
	putFile(t, cfg, `# a node's settings
addr: 127.0.0.1:9001
rate-limit: 5
governs: [genesis, mars]
registry-url: ""
log-format: json
nats-leaf: nats://hub:7422
`)
	fs, err := serveFlags(t, map[string]string{
		"CIVNODE_CONFIG":     cfg,
		"CIVNODE_ADDR":       "127.0.0.1:9002",
		"CIVNODE_RATE_BURST": "7",
		"CIVNODE_NATS_LEAF":  "",
	}, "--addr", "127.0.0.1:9003", "--max-conns", "12")
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"addr":         "127.0.0.1:9003", // flag over env over file
		"rate-burst":   "7",              // env over default
		"rate-limit":   "5",              // file over default
		"governs":      "[genesis,mars]",
		"registry-url": "",     // empty in the file
		"nats-leaf":    "",     // empty in the environment, over the file
		"log-format":   "json", // a global flag too
		"max-conns":    "12",
		"page-bytes":   fs.Lookup("page-bytes").DefValue,
	} {
		if got := fs.Lookup(flag).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", flag, got, want)
		}
	}
	// --config on the command line wins over $CIVNODE_CONFIG.
	other := filepath.Join(t.TempDir(), "other.yaml")
	putFile(t, other, "addr: 127.0.0.1:9004\n")
	fs, err = serveFlags(t, map[string]string{"CIVNODE_CONFIG": cfg}, "--config", other)
	if err != nil || fs.Lookup("addr").Value.String() != "127.0.0.1:9004" || fs.Lookup("rate-limit").Value.String() != fs.Lookup("rate-limit").DefValue {
		t.Errorf("--config over $CIVNODE_CONFIG: addr %s rate-limit %s, %v", fs.Lookup("addr").Value, fs.Lookup("rate-limit").Value, err)
	}
}

// TestServeSettingsRefused: a setting that names no flag, a value the flag
// refuses, or a file that is not a mapping is a usage error naming where it
// came from.
func TestServeSettingsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"unknown key", "adr: x\n", nil, `unknown setting "adr"`},
		{"bad value", "rate-limit: fast\n", nil, "rate-limit"},
		{"not a mapping", "- addr\n", nil, "want a mapping"},
		{"nested", "addr: {host: x}\n", nil, "want a value or a list"},
		{"twice", "addr: a\naddr: b\n", nil, "set twice"},
		{"bad env", "", map[string]string{"CIVNODE_MAX_CONNS": "many"}, "$CIVNODE_MAX_CONNS"},
		{"config in config", "config: other.yaml\n", nil, `unknown setting "config"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			putFile(t, path, tc.file)
			_, err := serveFlags(t, tc.env, "--config", path)
			if !isUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want a usage error with %q", err, tc.want)
			}
		})
	}
	if _, err := serveFlags(t, nil, "--config", filepath.Join(dir, "missing.yaml")); !isUsage(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestServeConfigEveryFlag: every flag of serve has its variable, and the
// config file takes every one of them by name, so the docs' table is the
// flag list.
func TestServeConfigEveryFlag(t *testing.T) {
	fs, err := serveFlags(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	var file strings.Builder
	env := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == configFlag || f.Name == "help" {
			return
		}
		v := f.DefValue
		if f.Value.Type() == "stringSlice" {
			v = strings.Trim(v, "[]")
		}
		file.WriteString(f.Name + ": \"" + v + "\"\n")
		env[envName(f.Name)] = v
	})
	path := filepath.Join(t.TempDir(), "all.yaml")
	putFile(t, path, file.String())
	if _, err := serveFlags(t, nil, "--config", path); err != nil {
		t.Errorf("every flag in the file: %v", err)
	}
	if _, err := serveFlags(t, env); err != nil {
		t.Errorf("every flag in the environment: %v", err)
	}
	doc, err := os.ReadFile("../../docs/running.md")
	if err != nil {
		t.Fatal(err)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" {
			return
		}
		if row := "| `--" + f.Name + "` | `" + envName(f.Name) + "` | "; !strings.Contains(string(doc), row) {
			t.Errorf("docs/running.md has no row %q", row)
		}
	})
	if envName("max-conns-per-addr") != "CIVNODE_MAX_CONNS_PER_ADDR" {
		t.Errorf("envName: %s", envName("max-conns-per-addr"))
	}
}

// putFile writes content to path.
func putFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestServeAsAService runs serve as systemd would: settings from a config
// file and CIVNODE_* variables only, JSON logs, and a notify socket. The
// service manager hears READY=1 once the node serves and STOPPING=1 once it
// stops; every request is logged with the id its response carries, and the
// token is in no log line.
func TestServeAsAService(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	cfg := filepath.Join(dir, "civnode.yaml")
	putFile(t, cfg, "addr: 127.0.0.1:0\nlog-format: text\nrate-limit: 100\n")
	env := map[string]string{
		"CIVNODE_CONFIG":     cfg,
		"CIVNODE_DATA_DIR":   filepath.Join(dir, "node"),
		"CIVNODE_LOG_FORMAT": "json", // over the file's text
		notifyEnv:            sock,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stderr := newLineWriter(), &syncBuffer{}
	m := testMain(nil, out, stderr)
	m.Getenv = func(k string) string { return env[k] }
	m.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve"}) }()

	read := func() string {
		t.Helper()
		notify.SetReadDeadline(time.Now().Add(waitTimeout))
		buf := make([]byte, 512)
		n, err := notify.Read(buf)
		if err != nil {
			t.Fatalf("notify socket: %v\nstderr:\n%s", err, stderr)
		}
		return string(buf[:n])
	}
	ready := read()
	var url string
	select {
	case line := <-out.lines:
		mm := listeningLine.FindStringSubmatch(line)
		if mm == nil {
			t.Fatalf("stdout %q", line)
		}
		url = mm[1]
	case <-time.After(waitTimeout):
		t.Fatal("no listening line")
	}
	if ready != "READY=1\nSTATUS=serving on "+strings.TrimPrefix(url, "http://") {
		t.Errorf("notice %q", ready)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "node", "control.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/state", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("X-Request-Id")
	getJSON(t, url+"/v1/ready", "", http.StatusOK, nil)

	cancel()
	if stopping := read(); stopping != "STOPPING=1" {
		t.Errorf("notice %q, want STOPPING=1", stopping)
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\nstderr:\n%s", err, stderr)
	}
	logged := false
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec["msg"] == "http request" && rec["route"] == "/v1/state" && rec["request_id"] == id && rec["level"] == "INFO" {
			logged = true
		}
		if rec["msg"] == "serving" && rec["rate_limit"] != 100.0 {
			t.Errorf("serving with rate_limit %v, want the file's 100", rec["rate_limit"])
		}
	}
	if !logged || id == "" {
		t.Errorf("no request log line with request_id %q:\n%s", id, stderr)
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the owner token is in the log")
	}
}

// TestNotifyServiceManager: without $NOTIFY_SOCKET nothing is sent; with it,
// one datagram, also to an abstract socket.
func TestNotifyServiceManager(t *testing.T) {
	m := testMain(nil, nil, nil)
	if err := m.notifyServiceManager("READY=1"); err != nil {
		t.Fatalf("without a socket: %v", err)
	}
	for _, name := range []string{filepath.Join(t.TempDir(), "n.sock"), "@civnode-test-" + strconv.Itoa(os.Getpid())} {
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		m.Getenv = func(k string) string {
			if k == notifyEnv {
				return name
			}
			return ""
		}
		if err := m.notifyServiceManager("READY=1"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		ln.SetReadDeadline(time.Now().Add(waitTimeout))
		n, err := ln.Read(buf)
		ln.Close()
		if err != nil || string(buf[:n]) != "READY=1" {
			t.Errorf("%s: got %q, %v", name, buf[:n], err)
		}
	}
	m.Getenv = func(string) string { return filepath.Join(t.TempDir(), "gone.sock") }
	if err := m.notifyServiceManager("READY=1"); err == nil {
		t.Error("no error for a socket nobody listens on")
	}
}

// TestPackagingFiles: the example config file is one serve takes, and the
// systemd unit runs serve with flags it has, as Type=notify (which serve
// speaks: TestServeAsAService).
func TestPackagingFiles(t *testing.T) {
	if _, err := serveFlags(t, nil, "--config", "../../docs/civnode.yaml"); err != nil {
		t.Errorf("docs/civnode.yaml: %v", err)
	}
	unit, err := os.ReadFile("../../docs/civnode.service")
	if err != nil {
		t.Fatal(err)
	}
	var exec []string
	notify := false
	for _, line := range strings.Split(string(unit), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = strings.Fields(rest)
		}
		notify = notify || line == "Type=notify"
	}
	if len(exec) < 2 || filepath.Base(exec[0]) != "civnode" || exec[1] != "serve" || !notify {
		t.Fatalf("unit: ExecStart %q, Type=notify %v", exec, notify)
	}
	m := testMain(nil, nil, nil)
	serve, _, err := m.newRootCommand().Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags(exec[2:]); err != nil {
		t.Errorf("unit's ExecStart: %v", err)
	}
}

// TestServeSourcesSplitLists: a flag that repeats (--witness) takes a list
// from the environment or the config file item by item, not as one value
// with commas in it; an empty value is an empty list.
func TestServeSourcesSplitLists(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want []string
	}{{"a@http://x,b@http://y", []string{"a@http://x", "b@http://y"}}, {"", []string{}}} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.String(configFlag, "", "")
		list := fs.StringArray("witness", nil, "")
		m := testMain(nil, io.Discard, io.Discard)
		m.LookupEnv = func(name string) (string, bool) {
			if name == "CIVNODE_WITNESS" {
				return tc.env, true
			}
			return "", false
		}
		if err := m.applyServeSources(fs); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(*list, tc.want) {
			t.Errorf("CIVNODE_WITNESS=%q gave %q, want %q", tc.env, *list, tc.want)
		}
	}
}
