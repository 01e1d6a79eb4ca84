package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
