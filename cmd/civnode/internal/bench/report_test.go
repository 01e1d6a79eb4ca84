package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestWriteJSON: one line holding one object of numbers, the context first and
// then the figures in report order, each ratio whose figure and limit were
// both measured, three decimals, and 0 for a value JSON cannot hold.
func TestWriteJSON(t *testing.T) {
	r := newResults(Config{Events: 200, Duration: time.Second})
	r.set("cpus", 2)
	r.set("sign_per_s", 50000)
	r.set("sign_cores_per_s", 100000)
	r.set("append_per_s", 80000.12345)
	r.set("verify_per_s", math.NaN())
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	const want = `{"cpus":2,"sign_per_s":50000,"sign_cores_per_s":100000,"verify_per_s":0,"append_per_s":80000.123,"append_x_sign_cores":0.8}` + "\n"
	if out.String() != want {
		t.Errorf("got  %s want %s", out.String(), want)
	}
	var got map[string]float64
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Errorf("not one JSON object of numbers: %v", err)
	}
}

// TestWriteTable: the heading states the run, a figure that was not measured
// says so (a dash when --node makes it unmeasurable), each figure stands beside
// its limit and ratio, and the hostile rows appear only with Hostile.
func TestWriteTable(t *testing.T) {
	for _, hostile := range []bool{false, true} {
		r := newResults(Config{Events: 200, Duration: 300 * time.Millisecond, Node: "http://127.0.0.1:7777", Hostile: hostile})
		r.set("cpus", 2)
		r.set("chain_events", 1234)
		r.set("fill_per_s", 900)
		r.set("sign_per_s", 50000)
		r.set("sign_cores_per_s", 100000)
		r.set("append_per_s", 80000)
		var out bytes.Buffer
		if err := r.WriteTable(&out); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range []string{
			"civnode bench: 2 CPUs, chain of 1,234 events (filled with 200 missions at 900/s), 300ms a phase\n",
			"node http://127.0.0.1:7777: restart, RSS and verify are measured only on a node bench starts\n",
			"append_per_s", "sign_cores_per_s 100,000", "0.80", "≥ 0.8 × sign, all cores",
			"http_create_seq_per_s", "skipped",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("hostile=%v: no %q in\n%s", hostile, want, s)
			}
		}
		if line := lineOf(s, "restart_s"); !strings.Contains(line, "—") {
			t.Errorf("restart_s with --node: %q, want a dash", line)
		}
		if got := strings.Contains(s, "hostile_completed_mb"); got != hostile {
			t.Errorf("hostile=%v: hostile rows shown %v", hostile, got)
		}
	}
}

func lineOf(s, key string) string {
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), key+" ") {
			return line
		}
	}
	return ""
}

func TestHuman(t *testing.T) {
	for v, want := range map[float64]string{
		1234567: "1,234,567", -1234: "-1,234", 456.7: "457", 45.67: "45.7", 3: "3", 4.567: "4.57", 0.01234: "0.0123",
	} {
		if got := human(v); got != want {
			t.Errorf("human(%v) = %q, want %q", v, got, want)
		}
	}
}
