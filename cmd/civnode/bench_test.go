package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestBenchJSON runs a small bench against a node started from the binary built
// by TestMain and checks that the JSON object holds every figure, each positive.
// It asserts nothing about the figures' size: they are measurements, not
// properties.
func TestBenchJSON(t *testing.T) {
	needBinary(t)
	tmp := t.TempDir()
	r := runCLI(t, nil, "bench", "--events", "200", "--duration", "300ms", "--json",
		"--binary", civnodeBin, "--tmp", tmp, "--log-level", "warn")
	if r.code != 0 {
		t.Fatalf("bench: exit %d, err %v\nstderr:\n%s", r.code, r.err, r.stderr)
	}
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout is not one line:\n%s", r.stdout)
	}
	var got map[string]float64
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object of numbers: %v\n%s", err, r.stdout)
	}
	want := []string{
		"cpus", "chain_events", "fill_per_s",
		"sign_per_s", "sign_cores_per_s", "verify_per_s", "pebble_sync_write_ms", "pebble_sync_writes_per_s",
		"http_limit_per_s", "http_limit_signed_per_s",
		"append_per_s", "append_x_sign_cores",
		"http_create_seq_per_s", "http_create_seq_x_sync_write", "http_create_seq_p50_ms",
		"http_create_c64_per_s", "http_create_c64_x_http_limit", "http_create_c64_p99_ms", "http_create_c64_node_cpu_us",
		"fill_first_per_s", "fill_last_per_s", "fill_last_x_first",
		"state_create_c64_per_s", "state_create_c64_x_http_limit", "state_lag_p50_ms", "state_lag_p99_ms",
		"state_entries", "state_proof_p50_ms", "state_proof_p50_x_sync_write", "state_proof_p99_ms",
		"events_since_c16_per_s", "events_since_c16_p99_ms",
		"verify_chain_per_s", "verify_chain_x_verify",
		"restart_s", "rss_after_restart_mb", "rss_under_readers_mb", "rss_peak_mb",
		"stream_events_per_s", "stream_delivery_p50_ms", "stream_delivery_p50_x_sync_write", "stream_delivery_p99_ms",
		"stream_clients_dropped", "stream_create_p99_ms", "stream_creates_missed",
		"stream_node_cores", "stream_node_cpu_us_per_event",
	}
	for _, k := range want {
		v, ok := got[k]
		switch {
		case !ok:
			t.Errorf("no %q in %s", k, r.stdout)
		case k == "stream_clients_dropped":
			if v != 0 {
				t.Errorf("%d stream clients missed events", int(v))
			}
		case k == "stream_creates_missed": // a count, 0 when the writers keep the pace
			if v < 0 {
				t.Errorf("%s = %v", k, v)
			}
		case !(v > 0):
			t.Errorf("%s = %v, want a positive figure", k, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d figures, want %d: %s", len(got), len(want), r.stdout)
	}
	if got["chain_events"] < 200 {
		t.Errorf("chain_events = %v, want at least the 200 missions of --events", got["chain_events"])
	}
	// The node's data dir and every other temporary file are gone.
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Errorf("bench left %v in its temporary dir (err %v)", left, err)
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "--token", "x"},
		{"bench", "--node", "http://127.0.0.1:7777"},
		{"bench", "--node", "http://127.0.0.1:7777", "--token", "x", "--token-file", "f"},
		{"bench", "--node", "http://192.0.2.1:7777", "--token", "x"},
		{"bench", "--duration", "0s"},
		{"bench", "--events", "-1"},
		{"bench", "extra"},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\nstderr:\n%s", args, r.code, r.stderr)
		}
	}
}
