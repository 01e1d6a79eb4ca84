package http

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/civnode/civnode/commands/servicenet"
	"github.com/civnode/civnode/commands/servicenet/servicenettest"
	"github.com/civnode/civnode/eventlog"
	"github.com/civnode/civnode/eventlog/events"
	"github.com/civnode/civnode/internal/testtool"
	"github.com/civnode/civnode/projections"
)

// metricsNode is a wired node whose log and server share one Metrics, as
// serve wires them.
func metricsNode(t *testing.T) (*civNode, *Metrics) {
	t.Helper()
	m := NewMetrics()
	n := newCivNodeServing(t,
		func(o *eventlog.Options) { o.OnGroupCommit = m.ObserveGroupCommit },
		func(o *Options) { o.Metrics = m })
	return n, m
}

// scrape reads GET /v1/metrics with token and parses it as Prometheus does.
func scrape(t *testing.T, n *testNode, token string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	r := n.request(http.MethodGet, "/v1/metrics", token, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/metrics: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type %q, want the Prometheus text format 0.0.4", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parse metrics: %v\n%s", err, r.body)
	}
	return fams, r.body
}

// sample finds the one metric of family name whose labels include want.
func sample(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
	var found []*dto.Metric
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

// TestMetricsCountWhatHappened drives a node and checks that the metrics say
// what happened: every appended event once, one fsync per group, each request
// under its route pattern, and the tip.
func TestMetricsCountWhatHappened(t *testing.T) {
	n, _ := metricsNode(t)
	before := n.log.Tip().Seq
	n.bootstrap(map[string]any{"public_id": "ada", "display_name": "Ada", "faction": "order", "role": "enforcer", "strategy": "balanced"})
	n.bootstrap(map[string]any{"public_id": "bob", "display_name": "Bob", "faction": "order", "role": "enforcer", "strategy": "balanced"})
	if r := n.get("/v1/core/missions/0190c5f4-0000-7000-8000-000000000000"); r.status != http.StatusNotFound {
		t.Fatalf("unknown mission: %d", r.status)
	}
	n.request(http.MethodGet, "/no/such/path/1", testToken, nil)
	n.request("BREW", "/no/such/path/2", testToken, nil)
	appended := n.log.Tip().Seq - before
	if appended == 0 {
		t.Fatal("the bootstraps appended nothing")
	}

	fams, _ := scrape(t, n.testNode, testToken)
	if got := sample(t, fams, "civnode_eventlog_appended_events_total", nil).GetCounter().GetValue(); got != float64(appended) {
		t.Errorf("appended_events_total %v, want %d", got, appended)
	}
	groups := sample(t, fams, "civnode_eventlog_group_commit_events", nil).GetHistogram()
	if groups.GetSampleSum() != float64(appended) || groups.GetSampleCount() == 0 || groups.GetSampleCount() > appended {
		t.Errorf("group commits: %d groups summing to %v events, want 1..%d groups summing to %d",
			groups.GetSampleCount(), groups.GetSampleSum(), appended, appended)
	}
	fsync := sample(t, fams, "civnode_eventlog_fsync_seconds", nil).GetHistogram()
	if fsync.GetSampleCount() != groups.GetSampleCount() || fsync.GetSampleSum() <= 0 {
		t.Errorf("fsync: %d observations summing to %vs, want one per group (%d) and time spent",
			fsync.GetSampleCount(), fsync.GetSampleSum(), groups.GetSampleCount())
	}
	if got := sample(t, fams, "civnode_eventlog_tip_seq", nil).GetGauge().GetValue(); got != float64(n.log.Tip().Seq) {
		t.Errorf("tip_seq %v, want %d", got, n.log.Tip().Seq)
	}
	if got := sample(t, fams, "civnode_eventlog_healthy", nil).GetGauge().GetValue(); got != 1 {
		t.Errorf("healthy %v, want 1", got)
	}
	// The store's upkeep, read from Pebble at the scrape: what the log's
	// StoreStats says, as gauges and counters.
	st, err := n.log.StoreStats()
	if err != nil {
		t.Fatal(err)
	}
	if got := sample(t, fams, "civnode_store_disk_bytes", nil).GetGauge().GetValue(); got <= 0 {
		t.Errorf("store_disk_bytes %v, want the store's files", got)
	}
	for name, want := range map[string]float64{
		"civnode_store_l0_sublevels":       float64(st.L0Sublevels),
		"civnode_store_flushes_total":      float64(st.Flushes),
		"civnode_store_compactions_total":  float64(st.Compactions),
		"civnode_store_write_stalls_total": float64(st.WriteStalls),
	} {
		m := sample(t, fams, name, nil)
		got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if got != want {
			t.Errorf("%s %v, want %v (StoreStats)", name, got, want)
		}
	}
	sample(t, fams, "civnode_store_compaction_debt_bytes", nil)
	if got := sample(t, fams, "civnode_store_compaction_score", nil).GetGauge().GetValue(); got != st.CompactionScore {
		t.Errorf("store_compaction_score %v, want %v (StoreStats)", got, st.CompactionScore)
	}
	sample(t, fams, "civnode_store_compaction_seconds_total", nil)
	sample(t, fams, "civnode_store_write_stall_seconds_total", nil)

	const reqs = "civnode_http_request_duration_seconds"
	if got := sample(t, fams, reqs, map[string]string{"method": "POST", "route": "/v1/civilization/bootstrap-identity", "status": "200"}).GetHistogram().GetSampleCount(); got != 2 {
		t.Errorf("bootstrap requests counted %d, want 2", got)
	}
	// The pattern, not the path: a mission id never becomes a label.
	sample(t, fams, reqs, map[string]string{"method": "GET", "route": "/v1/core/missions/:mission_id", "status": "404"})
	if got := sample(t, fams, reqs, map[string]string{"route": "unmatched", "status": "404", "method": "GET"}).GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("unmatched GETs %d, want 1", got)
	}
	sample(t, fams, reqs, map[string]string{"route": "unmatched", "method": "OTHER"})
	for _, m := range fams[reqs].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), "/no/such") || l.GetValue() == "BREW" {
				t.Errorf("a label holds the client's free text: %s=%q", l.GetName(), l.GetValue())
			}
		}
	}
	// Go's and the process's own collectors are there too.
	sample(t, fams, "go_goroutines", nil)
}

// TestMetricsAuth: any token of the node reads the metrics, a scraper's
// observer token included; no token is 401.
func TestMetricsAuth(t *testing.T) {
	n, _ := metricsNode(t)
	n.bootstrap(map[string]any{"public_id": "ada", "display_name": "Ada", "faction": "order", "role": "enforcer", "strategy": "balanced"})
	for name, token := range map[string]string{"owner": testToken, "observer": n.observerToken(), "agent": n.agentToken("ada")} {
		if r := n.request(http.MethodGet, "/v1/metrics", token, nil); r.status != http.StatusOK {
			t.Errorf("%s token: %d %s", name, r.status, r.body)
		}
	}
	n.request(http.MethodGet, "/v1/metrics", "", nil).wantError(t, http.StatusUnauthorized, "unauthorized", "")
}

// TestMetricsCommitFailure: a failed fsync is counted and the log reported
// unhealthy, while the metrics stay readable.
func TestMetricsCommitFailure(t *testing.T) {
	m := NewMetrics()
	m.ObserveGroupCommit(eventlog.GroupCommit{Events: 3, Duration: time.Millisecond, Err: os.ErrClosed})
	n := newTestNodeWith(t, func(o *Options) { o.Metrics = m }, nil)
	fams, _ := scrape(t, n, testToken)
	if got := sample(t, fams, "civnode_eventlog_commit_failures_total", nil).GetCounter().GetValue(); got != 1 {
		t.Errorf("commit failures %v, want 1", got)
	}
	if got := sample(t, fams, "civnode_eventlog_appended_events_total", nil).GetCounter().GetValue(); got != 0 {
		t.Errorf("a failed group counted %v appended events", got)
	}
}

// TestMetricsRegistryCalls: the registry client's attempts arrive by
// operation and outcome, a retried read once per attempt.
func TestMetricsRegistryCalls(t *testing.T) {
	key := ed25519.NewKeyFromSeed(testSeed)
	reg := servicenettest.New(t, servicenettest.Options{NodeKey: key.Public().(ed25519.PublicKey)})
	reg.Add(servicenettest.Agent{ID: "echo"})
	m := NewMetrics()
	client, err := servicenet.New(servicenet.Config{BaseURL: reg.URL,
		NodeDID: eventlog.DIDKey(key.Public().(ed25519.PublicKey)),
		Sign:    func(msg []byte) []byte { return ed25519.Sign(key, msg) },
		Retries: -1, Observe: m.ObserveRegistry, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.ListAgents(ctx); err != nil {
		t.Fatalf("list agents: %v", err)
	}
	if _, err := client.Card(ctx, "no-such-agent"); err == nil {
		t.Fatal("an unknown agent's card was found")
	}
	n := newTestNodeWith(t, func(o *Options) { o.Metrics = m }, nil)
	fams, _ := scrape(t, n, testToken)
	if got := sample(t, fams, "civnode_registry_calls_total", map[string]string{"op": "list_agents", "outcome": "ok"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("list_agents ok %v, want 1", got)
	}
	if got := sample(t, fams, "civnode_registry_calls_total", map[string]string{"op": "get_card", "outcome": "client_error"}).GetCounter().GetValue(); got != 1 {
		t.Errorf("get_card client_error %v, want 1", got)
	}
	if got := sample(t, fams, "civnode_registry_call_duration_seconds", map[string]string{"op": "list_agents"}).GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("list_agents durations %d, want 1", got)
	}
}

// TestMetricsSkippedEvents: every read model has its count of the events it
// could not apply, labelled with its name, and an event a model refuses shows
// in its count only.
func TestMetricsSkippedEvents(t *testing.T) {
	n, _ := metricsNode(t)
	n.bootstrap(map[string]any{"public_id": "ada", "display_name": "Ada"})
	fams, _ := scrape(t, n.testNode, testToken)
	if got, want := len(fams["civnode_read_model_skipped_events_total"].GetMetric()), len(projections.Models()); got != want {
		t.Errorf("%d skipped series, want one per model (%d)", got, want)
	}
	// Payloads no command writes: the missions and oracle models refuse them.
	n.appendEvents(events.TypeMissionCreated, events.TypeOracleSubscribed, events.TypeOracleSubscribed)
	fams, _ = scrape(t, n.testNode, testToken)
	want := map[string]float64{"missions": 1, "oracle": 2}
	for _, m := range projections.Models() {
		got := sample(t, fams, "civnode_read_model_skipped_events_total", map[string]string{"model": m.Name}).GetCounter().GetValue()
		if got != want[m.Name] {
			t.Errorf("%s skipped %v, want %v", m.Name, got, want[m.Name])
		}
	}
}

// TestMetricsWithoutModels: a server without read models has no skipped
// series, rather than a failed scrape.
func TestMetricsWithoutModels(t *testing.T) {
	n := newTestNode(t)
	fams, _ := scrape(t, n, testToken)
	if _, ok := fams["civnode_read_model_skipped_events_total"]; ok {
		t.Error("a server without read models reports skipped events")
	}
}

// TestMetricsStreamClients: a connected WebSocket client shows in the gauge.
func TestMetricsStreamClients(t *testing.T) {
	n := newStreamNode(t, streamNodeConfig{})
	conn, _, err := n.dial(t, "", http.Header{"Authorization": {"Bearer " + testToken}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	deadline := time.Now().Add(waitDeadline)
	for {
		fams, _ := scrape(t, n.testNode, testToken)
		got := sample(t, fams, "civnode_stream_clients", nil).GetGauge().GetValue()
		sample(t, fams, "civnode_stream_dropped_clients_total", nil)
		if got == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream clients %v, want 1", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMetricsPromtool runs Prometheus's own checker, promtool check metrics
// (Debian prometheus), over a scrape of a node that has served requests of
// every kind. It needs promtool; without it the test is skipped, except in
// CI (CI=true), where .ci/run installs it and its absence fails.
func TestMetricsPromtool(t *testing.T) {
	promtool := testtool.Need(t, "promtool", "install Debian's prometheus package (apt-get install prometheus)")
	n, m := metricsNode(t)
	if err := m.SetBuildInfo("v1.2.3", "0123456789abcdef", "go1.26.0"); err != nil {
		t.Fatal(err)
	}
	n.bootstrap(map[string]any{"public_id": "ada", "display_name": "Ada", "faction": "order", "role": "enforcer", "strategy": "balanced"})
	n.request(http.MethodGet, "/no/such/path", testToken, nil)
	for _, o := range []string{servicenet.OutcomeOK, servicenet.OutcomeTimeout, servicenet.OutcomeUnreachable} {
		m.ObserveRegistry(servicenet.Attempt{Op: servicenet.OpInvoke, Outcome: o, Duration: time.Second})
	}
	fams, body := scrape(t, n.testNode, testToken)
	if got := sample(t, fams, "civnode_build_info", map[string]string{"version": "v1.2.3", "commit": "0123456789abcdef", "goversion": "go1.26.0"}); got.GetGauge().GetValue() != 1 {
		t.Errorf("civnode_build_info %v, want 1", got)
	}
	path := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s\n(the scrape is in %s)", err, out, path)
	}

	// promtool can fail: a counter without _total is one of its lint rules.
	bad := append(bytes.Clone(body), "# HELP civnode_bad_counter A counter named against the rules.\n# TYPE civnode_bad_counter counter\ncivnode_bad_counter 1\n"...)
	cmd = exec.CommandContext(ctx, promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(bad)
	if out, err := cmd.CombinedOutput(); err == nil && len(bytes.TrimSpace(out)) == 0 {
		t.Fatal("promtool accepted a counter without _total: the check cannot fail")
	}
}
