package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/civnode/civnode/internal/testtool"
)

// warmEtcdHarness builds the etcd peer harness once with the go tool, so that
// the build bench runs links from the build cache; where it cannot be built
// (offline without etcd's modules) t is skipped, but not in CI.
func warmEtcdHarness(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", filepath.Join(t.TempDir(), "etcdput"), ".")
	cmd.Dir = filepath.Join("..", "..", "bench", "peers", "etcdput")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		testtool.Missing(t, "the etcd harness does not build here (it needs a reachable Go module proxy): "+
			err.Error()+"\n"+string(out))
	}
}

// TestBenchBesideEtcd runs a small bench with --peer etcd and checks that the
// JSON object holds the figures of the rounds beside etcd, each positive.
func TestBenchBesideEtcd(t *testing.T) {
	needBinary(t)
	warmEtcdHarness(t) // a cold build outlasts runCLI's bound; bench's own links from the cache
	tmp := t.TempDir()
	r := runCLI(t, nil, "bench", "--events", "100", "--duration", "300ms", "--json",
		"--binary", civnodeBin, "--tmp", tmp, "--log-level", "warn",
		"--peer", "etcd", "--peer-rounds", "2", "--peer-puts", "300")
	if r.code != 0 {
		t.Fatalf("bench: exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
	}
	var got map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object of numbers: %v\n%s", err, r.stdout)
	}
	for _, k := range []string{
		"etcd_put_c64_per_s", "etcd_put_c64_p99_ms",
		"etcd_beside_http_create_c64_per_s", "etcd_beside_http_create_c64_p99_ms", "etcd_beside_http_create_c64_x_etcd_put",
		"http_create_c64_per_s",
	} {
		if v, ok := got[k]; !ok || !(v > 0) {
			t.Errorf("%s = %v (present %v), want a positive figure", k, v, ok)
		}
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("bench left %v in its temporary dir (err %v)", left, err)
	}
}

func TestBenchPeerUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--peer", "nats"},
		{"bench", "--peer", "etcd", "--peer-rounds", "0"},
		{"bench", "--peer", "etcd", "--peer-puts", "0"},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\nstderr:\n%s", args, r.code, r.stderr)
		}
	}
}
