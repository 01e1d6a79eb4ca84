package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
)

// buildEtcdHarness builds the etcd harness into a temporary dir of t, or
// skips t where it cannot be built (no go tool, its modules out of reach
// offline); in CI it must build. A second build links from the build cache.
func buildEtcdHarness(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds etcd and runs it")
	}
	bin := filepath.Join(t.TempDir(), "etcdput")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := buildEtcdPeer(ctx, bin)
	var u peerUnavailableError
	switch {
	case errors.As(err, &u):
		testtool.Missing(t, "the etcd harness does not build here (it needs go and a reachable Go module proxy): "+err.Error())
	case err != nil:
		t.Fatal(err)
	}
	return bin
}

// TestEtcdPeerHarness runs the etcd harness with few Puts and checks that it
// prints one JSON line of positive figures and leaves nothing behind.
func TestEtcdPeerHarness(t *testing.T) {
	bin := buildEtcdHarness(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-n", "300", "-c", "16", "-conns", "4", "-warmup", "50", "-value-size", "461", "-dir", tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("etcdput: %v\nstderr:\n%s", err, stderr.Bytes())
	}
	if strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("stdout is not one line:\n%s", stdout.Bytes())
	}
	var got map[string]float64
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not one JSON object of numbers: %v\n%s", err, stdout.Bytes())
	}
	for _, k := range []string{"puts_per_s", "p50_ms", "p99_ms", "clients", "conns", "n", "value_bytes"} {
		if v, ok := got[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v), want a positive figure", k, v, ok)
		}
	}
	for k, want := range map[string]float64{"clients": 16, "conns": 4, "n": 300, "value_bytes": 461} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if _, err := parsePeerLine(stdout.Bytes()); err != nil {
		t.Error(err)
	}
	// As bench runs it: the Puts, the goroutines and the mission body's size.
	r, err := runEtcdPeer(ctx, bin, tmp, 200, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 200 || r.Clients != 8 || r.Conns != etcdPeerConns || r.ValueBytes != len(missionBody()) {
		t.Errorf("runEtcdPeer(n 200, clients 8) = %+v", r)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("etcdput left %v in its temporary dir (err %v)", left, err)
	}
}

func TestParsePeerLine(t *testing.T) {
	good := `{"puts_per_s":6800.5,"p50_ms":7.1,"p99_ms":30.2,"clients":64,"conns":8,"n":20000,"value_bytes":461}` + "\n"
	r, err := parsePeerLine([]byte(good))
	if err != nil || r.PutsPerS != 6800.5 || r.P99Ms != 30.2 || r.Clients != 64 || r.N != 20000 {
		t.Errorf("parsePeerLine(%s) = %+v, %v", good, r, err)
	}
	for _, bad := range []string{
		"",
		"not json\n",
		good + good,
		`{"puts_per_s":0,"p50_ms":7.1,"p99_ms":30.2,"clients":64,"n":20000}`,
		`{"p50_ms":7.1,"p99_ms":30.2,"clients":64,"n":20000}`,
		`{"puts_per_s":6800,"p50_ms":7.1,"clients":64,"n":20000}`,
	} {
		if r, err := parsePeerLine([]byte(bad)); err == nil {
			t.Errorf("parsePeerLine(%q) = %+v, want an error", bad, r)
		}
	}
}

// TestEtcdPeerWithoutGo: with no go tool the harness is unavailable, which
// bench reports and skips, rather than an error that ends the run.
func TestEtcdPeerWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := buildEtcdPeer(context.Background(), filepath.Join(t.TempDir(), "etcdput"))
	var u peerUnavailableError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "go tool") {
		t.Errorf("buildEtcdPeer without go: %v, want a peerUnavailableError naming the go tool", err)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1}, 2.5}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestPeerConfigCheck: the peer flags' mistakes are refused with the flag
// they concern.
func TestPeerConfigCheck(t *testing.T) {
	ok := Config{Duration: time.Second, HostileDuration: time.Second, Peers: []string{"etcd"}, PeerRounds: 3, PeerPuts: 20000}
	with := func(f func(*Config)) Config { c := ok; f(&c); return c }
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{with(func(c *Config) { c.Peers = []string{"nats"} }), `--peer "nats": the peers are etcd`},
		{with(func(c *Config) { c.PeerRounds = 0 }), "--peer-rounds must be 1 or more"},
		{with(func(c *Config) { c.PeerPuts = 0 }), "--peer-puts must be 1 or more"},
	} {
		if err := tt.cfg.Check(); err == nil || err.Error() != tt.want {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if err := ok.Check(); err != nil {
		t.Errorf("--peer etcd: %v", err)
	}
	none := with(func(c *Config) { c.Peers, c.PeerRounds = nil, 0 })
	if err := none.Check(); err != nil {
		t.Errorf("no --peer: %v", err)
	}
}
