package doctor

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/civnode/civnode/cmd/civnode/internal/datadir"
)

// TestRunWithoutDataDir: a dir that does not exist fails data_dir, skips what
// needs it, never reaches for a node, and still checks the port and the
// registry; the checks come in the report's order.
func TestRunWithoutDataDir(t *testing.T) {
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer reg.Close()
	dir := datadir.Dir(filepath.Join(t.TempDir(), "none"))
	reached := func(context.Context, datadir.Dir, string) (Node, error) {
		t.Error("Reach called without a data dir")
		return nil, net.ErrClosed
	}
	proved := func(context.Context, net.Conn, string, ed25519.PublicKey, string) (Node, error) {
		t.Error("Prove called without a node key")
		return nil, net.ErrClosed
	}
	rep, err := Run(context.Background(), dir, Options{Addr: "127.0.0.1:0", RegistryURL: reg.URL, Reach: reached, Prove: proved})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	status := map[string]string{}
	for _, c := range rep.Checks {
		names = append(names, c.Name)
		status[c.Name] = c.Status
	}
	want := []string{"data_dir", "db", "node_key", "control_token", "registry_credential", "wallets",
		"disk", "chain", "read_models", "node", "port", "registry"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks %v, want %v", names, want)
	}
	for name, st := range map[string]string{"data_dir": statusFail, "chain": statusSkip, "node": statusSkip, "port": statusOK, "registry": statusWarn} {
		if status[name] != st {
			t.Errorf("%s: %s, want %s", name, status[name], st)
		}
	}
	if rep.Status != statusFail || rep.Failed == 0 || rep.DataDir != string(dir) {
		t.Errorf("report %+v", rep)
	}
}

// TestReportText: a line per check, a fix under each problem, FAIL in
// capitals, and a summary that counts.
func TestReportText(t *testing.T) {
	rep := newReport("/srv/node", "127.0.0.1:7777", "https://registry.example", []Check{
		{Name: "data_dir", Status: statusOK, Detail: "fine"},
		{Name: "node_key", Status: statusFail, Detail: "missing", Fix: "restore it"},
		{Name: "disk", Status: statusWarn, Detail: "low"},
	})
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	const want = "civnode doctor: data dir /srv/node, addr 127.0.0.1:7777, registry https://registry.example\n" +
		"ok    data_dir  fine\n" +
		"FAIL  node_key  missing\n" +
		"                fix: restore it\n" +
		"warn  disk      low\n" +
		"1 check failed, 1 warning: see the fixes above\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := rep.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), `{"data_dir":"/srv/node",`) || !strings.Contains(out.String(), `"status":"fail","failed":1,"warnings":1`) ||
		strings.Count(out.String(), "\n") != 1 {
		t.Errorf("JSON %s", out.String())
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/node":      "/srv/node",
		"/srv/my node":   "'/srv/my node'",
		"/srv/it's":      `'/srv/it'\''s'`,
		"":               "''",
		"a-b_c.d+e:f@g=": "a-b_c.d+e:f@g=",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[uint64]string{512: "512 B", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
